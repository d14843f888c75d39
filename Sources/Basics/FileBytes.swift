#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A whole file read into memory with the C library, its failure named in the system's own
/// words ("No such file or directory"), without Foundation's `Data(contentsOf:)` and the
/// `NSError` unwrapping it takes to get those words back out.
public enum FileBytes {
    /// Why a file could not be read: the system's description of `errno`.
    public struct ReadError: Error, CustomStringConvertible {
        public var code: Int32
        public var description: String { String(cString: strerror(code)) }
    }

    /// Every byte of the file at `path`.
    public static func contents(ofPath path: String) throws(ReadError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ReadError(code: errno) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes.append(contentsOf: chunk[0..<count])
            } else if count == 0 {
                return bytes
            } else if errno != EINTR {
                throw ReadError(code: errno)
            }
        }
    }
}

