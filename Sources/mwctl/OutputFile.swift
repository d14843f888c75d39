#if canImport(Glibc)
import Glibc
#endif

/// Files mwctl writes (`export -o`, `history --html`), each replaced whole: written beside its
/// final name, then renamed over it, so a reader never sees half a file. Failures carry the
/// system's words ("Permission denied"), which Foundation's file errors hide in nested
/// `NSError`s (and full Foundation would link ICU's data into mwctl).
enum OutputFile {
    /// Why a file or directory could not be made: the system's description of `errno`.
    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var description: String { String(cString: strerror(code)) }
    }

    /// Replaces the file at `path` with `bytes` (permissions 0666 less the umask, as a new file).
    static func write(_ bytes: [UInt8], to path: String) throws(Failure) {
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw Failure(code: errno) }
        let code = bytes.withUnsafeBytes { writeAll(descriptor, $0) }
        if code != 0 {
            close(descriptor)
            unlink(temporary)
            throw Failure(code: code)
        }
        if close(descriptor) != 0 || rename(temporary, path) != 0 {
            let code = errno
            unlink(temporary)
            throw Failure(code: code)
        }
    }

    /// Makes the directory at `path` and any missing parents (`mkdir -p`).
    static func createDirectory(_ path: String) throws(Failure) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o777) != 0, errno != EEXIST { throw Failure(code: errno) }
            prefix += "/"
        }
        var status = stat()
        guard stat(path, &status) == 0 else { throw Failure(code: errno) }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw Failure(code: ENOTDIR) }
    }

    /// True when something exists at `path`.
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Removes the file at `path` if there is one.
    static func remove(_ path: String) { unlink(path) }
}
