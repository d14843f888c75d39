import Foundation
import Logging
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Writes each document as `ROOT/records/NAME.json` or `ROOT/realtime_data/NAME.json`
/// (plain JSON of its fields), the embedded default for offline field work.
///
/// A file appears complete or not at all: it is written to a temporary file in the same
/// directory, fsynced, renamed over the final name, and the directory is fsynced. A document
/// whose file exists is already stored (its name is its identity), so a replay is a no-op;
/// except a revised records document (``RecordsDocument/revision`` > 0), which replaces the
/// file the same atomic way (a reader sees the old version or the new, whole).
///
/// The writes and fsyncs run on NIO's blocking-I/O thread pool, not on Swift's cooperative
/// pool: on a 2-core board that pool has two threads, and an fsync that waits for the SD
/// card would stall every task of the daemon (board streams, D-Bus, the control API) with it.
public struct DirectorySink: Sink {
    public var name: String { "directory" }
    /// The root directory.
    public let root: String
    private let logger: Logger

    /// A sink writing under `root` (created with its two collection folders).
    public init(root: String, logger: Logger = Logger(label: "mwgate.uplink.directory")) throws(SinkError) {
        self.root = root
        self.logger = logger
        for collection in ["records", "realtime_data"] {
            do {
                try FileManager.default.createDirectory(atPath: "\(root)/\(collection)", withIntermediateDirectories: true)
            } catch {
                throw .permanent(reason: "cannot create \(root)/\(collection): \(error.localizedDescription)")
            }
        }
        // Leftovers of writes cut short by a crash are never valid documents.
        for collection in ["records", "realtime_data"] {
            let dir = "\(root)/\(collection)"
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where entry.hasPrefix(".tmp-") {
                try? FileManager.default.removeItem(atPath: "\(dir)/\(entry)")
            }
        }
    }

    /// Path of a document's file.
    public func path(of document: SinkDocument) -> String { "\(root)/\(document.collection)/\(document.name).json" }

    public func write(_ documents: [SinkDocument]) async throws(SinkError) {
        try await Self.onBlockingThread { [self] () throws(SinkError) in
            for doc in documents {
                guard Self.isSafeFileName(doc.name) else { throw .permanent(reason: "document name \"\(doc.name)\" is not a safe file name") }
                let final = path(of: doc)
                if !doc.replacesStored, FileManager.default.fileExists(atPath: final) { continue }
                try Self.writeAtomically(doc.jsonBytes, to: final, directory: "\(root)/\(doc.collection)")
            }
        }
    }

    /// Runs `body` on NIO's blocking-I/O pool and waits without holding a cooperative thread.
    static func onBlockingThread(_ body: @escaping @Sendable () throws(SinkError) -> Void) async throws(SinkError) {
        do {
            try await NIOThreadPool.singleton.runIfActive { try body() }
        } catch let error as SinkError {
            throw error
        } catch {
            throw .transient(reason: "the blocking I/O thread pool is not running: \(error)", retryAfter: nil)
        }
    }

    public func close() async {}

    static func isSafeFileName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.hasPrefix(".") && !name.contains("\0")
    }

    /// temp file, write, fsync, rename, fsync directory.
    static func writeAtomically(_ bytes: [UInt8], to final: String, directory: String) throws(SinkError) {
        let temp = "\(directory)/.tmp-\(UUID().uuidString)"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.ioError("create \(temp)") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = Self.ioError("write \(temp)")
                Glibc.close(fd)
                unlink(temp)
                throw e
            }
            offset += n
        }
        guard fsync(fd) == 0 else {
            let e = Self.ioError("fsync \(temp)")
            Glibc.close(fd)
            unlink(temp)
            throw e
        }
        Glibc.close(fd)
        guard rename(temp, final) == 0 else {
            let e = Self.ioError("rename to \(final)")
            unlink(temp)
            throw e
        }
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw Self.ioError("open directory \(directory)") }
        defer { Glibc.close(dfd) }
        guard fsync(dfd) == 0 else { throw Self.ioError("fsync directory \(directory)") }
    }

    /// Disk full or a read-only mount may clear up; everything else here also could, so
    /// I/O errors pause the drain instead of dead-lettering data.
    static func ioError(_ what: String) -> SinkError {
        .transient(reason: "\(what): \(String(cString: strerror(errno)))", retryAfter: nil)
    }
}
