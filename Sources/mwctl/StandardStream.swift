#if canImport(Glibc)
import Glibc
#endif

/// stdout and stderr written directly with write(2): unbuffered, so live output reaches a pipe
/// at once, and without Foundation's `FileHandle` (full Foundation, which would link ICU's data
/// into mwctl).
enum StandardStream {
    case output, error

    private var descriptor: Int32 { self == .output ? STDOUT_FILENO : STDERR_FILENO }

    /// Writes `text` as UTF-8.
    func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes `bytes`.
    func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// Writes every byte; an error (a closed pipe: the reader is gone) leaves nobody to tell.
    private func write(_ bytes: UnsafeRawBufferPointer) {
        _ = writeAll(descriptor, bytes)
    }
}

/// Writes every byte of `bytes` to `descriptor`, on through short writes and interruptions;
/// 0, or the `errno` of the error that stopped it.
func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    var offset = 0
    while offset < bytes.count {
        let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if written > 0 {
            offset += written
        } else if written < 0, errno == EINTR {
            continue
        } else {
            return written < 0 ? errno : EIO
        }
    }
    return 0
}
