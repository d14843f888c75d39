import Foundation
import Recording
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A segment as stored: the journal's record, or a row of `open_segments` (databases written
/// before the journal).
struct StoredSegment: Hashable {
    var sessionID: String
    var board: String
    var firstIndex: Int
    var pointCount: Int
    var timeSource: String
    var points: [UInt8]
    /// Held points (``OpenSegment/held``): merged by time, not placed by index.
    var held = false

    /// One past the last index the record is needed for. A held record is needed until the
    /// chunk that gets the hold's first point is sealed: the hold is written out at its final
    /// indices (durably) before that chunk can be sealed.
    var end: Int { held ? firstIndex + 1 : firstIndex + pointCount }
}

/// The open chunks' segments, appended once a second to files beside the database
/// (`buffer.sqlite-segments-N`) and made durable with one `fdatasync`, instead of rows of the
/// database. In the database each second's segments cost their bytes twice more (the WAL,
/// then the checkpoint, and the B-tree, free-list and pointer-map pages around them) and the
/// seal's delete as much again; in a file they cost their bytes and the one partly written
/// 4 KiB page of the last second. The seal still writes the chunk, whole and final, into the
/// database; a crash leaves what the database has not sealed here, and recovery seals it.
///
/// Record: magic `MWSG`, body length (UInt32 LE), CRC-32 of the body, body: version 1, the
/// file's salt (UInt32 LE, random for each use of a file), session ID, board, time source (UInt16 LE length + UTF-8 each), first index (Int64 LE),
/// point count (UInt32 LE), stride (UInt16 LE) and byte count (UInt32 LE) of the points, then
/// the points (PointCodec) packed (`SegmentPacking`); version 2 is the same for held points
/// (``OpenSegment/held``); or a body of version 0, the salt and
/// zeros, that pads a second's write to the next 4 KiB boundary (`pad`). A torn or damaged
/// record, or one with another salt, ends its file: what follows it in that file is not read.
///
/// A file is retired once every record in it is covered by sealed chunks or belongs to a
/// session that ended: kept as the spare the next new file is written over (so appends stop
/// growing files, which costs file-system metadata at every `fdatasync`), or deleted. Past `rotationBytes` the next second starts a new file, carrying over
/// the records still needed (a board whose chunk fills slowly), so the files stay small
/// whatever the session's length.
final class SegmentJournal: Sendable {
    /// Size past which the next append starts a new file (about two minutes of 4 boards at 100 Hz).
    static let rotationBytes = 1 << 20
    static let magic: [UInt8] = Array("MWSG".utf8)
    static let headerSize = 12
    /// The file system block a write is padded to (see `pad`).
    static let blockSize = 4096

    /// A problem writing the journal.
    struct WriteError: Error, CustomStringConvertible {
        var operation: String
        var path: String
        var code: Int32
        var description: String { "segment journal \(path): \(operation) failed: \(String(cString: strerror(code)))" }
    }

    private struct Key: Hashable {
        var session: String
        var board: String
    }

    /// What a file holds: the end index of each board's last record in it, and its point bytes.
    private struct Coverage {
        var ends: [Key: Int] = [:]
        var pointBytes: Int64 = 0

        mutating func add(_ segment: StoredSegment) {
            let key = Key(session: segment.sessionID, board: segment.board)
            ends[key] = max(ends[key] ?? 0, segment.end)
            pointBytes += Int64(segment.points.count)
        }
    }

    private struct State {
        /// Generation, descriptor and end offset of the file being appended to.
        var current: (generation: Int, descriptor: Int32, end: Int, salt: UInt32)?
        var files: [Int: Coverage] = [:]
        /// Per session and board, the point index sealed chunks reach.
        var sealed: [Key: Int] = [:]
        var ended: Set<String> = []
        var nextGeneration = 1
    }

    /// The database path the files are named after.
    let databasePath: String
    private let state: Mutex<State>

    /// The journal of `databasePath`: existing files are read to know what they hold (they are
    /// kept until recovery or the end of their session says they are no longer needed).
    init(databasePath: String) {
        self.databasePath = databasePath
        var initial = State()
        for (generation, path) in Self.files(databasePath: databasePath) {
            var coverage = Coverage()
            for segment in Self.read(path: path) { coverage.add(segment) }
            initial.files[generation] = coverage
            initial.nextGeneration = max(initial.nextGeneration, generation + 1)
        }
        state = Mutex(initial)
    }

    deinit {
        state.withLock { state in
            if let current = state.current { close(current.descriptor) }
        }
    }

    // MARK: Writing

    /// Appends the segments as one write to the current file and makes it durable
    /// (`fdatasync`) before returning. A failed write is cut off again, so the next append
    /// still follows a whole record.
    func append(_ segments: [OpenSegment]) throws {
        guard !segments.isEmpty else { return }
        let stored = segments.map {
            StoredSegment(sessionID: $0.sessionID, board: $0.board, firstIndex: $0.firstIndex, pointCount: $0.pointCount,
                          timeSource: $0.timeSource.rawValue, points: $0.bytes, held: $0.held)
        }
        try state.withLock { state in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(stored.reduce(0) { $0 + $1.points.count + 96 })
            if state.current.map({ $0.end >= Self.rotationBytes }) ?? true {
                try rotate(&state, scratch: &bytes)
            }
            guard let current = state.current else { return }
            for segment in stored { Self.encode(segment, salt: current.salt, to: &bytes) }
            Self.pad(&bytes, startingAt: current.end, salt: current.salt)
            let path = Self.path(databasePath, generation: current.generation)
            try Self.writeAll(bytes, descriptor: current.descriptor, offset: current.end, path: path)
            state.current?.end += bytes.count
            for segment in stored { state.files[current.generation, default: Coverage()].add(segment) }
        }
    }

    /// Starts a new file holding the records of older files still needed (written and synced
    /// here, with the file's directory entry), then retires the older files. The new file is
    /// the spare a retired one left when there is one, written over from its start: blocks
    /// already allocated and written, so a second's `fdatasync` writes its data and no file
    /// system metadata (a growing file's size and extents cost a journal commit each time).
    /// Its records carry a new random salt, so the old records after them are not read.
    private func rotate(_ state: inout State, scratch bytes: inout [UInt8]) throws {
        let generation = state.nextGeneration
        let path = Self.path(databasePath, generation: generation)
        let salt = UInt32.random(in: 1...UInt32.max)
        let spare = Self.sparePath(databasePath)
        let recycled = access(spare, F_OK) == 0 && rename(spare, path) == 0
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (recycled ? 0 : O_TRUNC), 0o644)
        guard descriptor >= 0 else { throw WriteError(operation: "create", path: path, code: errno) }
        var carried = Coverage()
        for (old, _) in state.files.sorted(by: { $0.key < $1.key }) {
            for segment in Self.read(path: Self.path(databasePath, generation: old)) where isNeeded(segment, state) {
                Self.encode(segment, salt: salt, to: &bytes)
                carried.add(segment)
            }
        }
        do {
            try Self.writeAll(bytes, descriptor: descriptor, offset: 0, path: path, cutOnFailure: !recycled)
            try Self.syncDirectory(of: path)
        } catch {
            close(descriptor)
            unlink(path)
            throw error
        }
        if let current = state.current { close(current.descriptor) }
        for old in state.files.keys { retire(generation: old) }
        state.files = [generation: carried]
        state.current = (generation, descriptor, bytes.count, salt)
        state.nextGeneration = generation + 1
        bytes.removeAll(keepingCapacity: true)
    }

    /// A file no longer needed becomes the spare the next new file is written over (when there
    /// is none yet), otherwise it is deleted.
    private func retire(generation: Int) {
        let path = Self.path(databasePath, generation: generation)
        let spare = Self.sparePath(databasePath)
        if access(spare, F_OK) == 0 || rename(path, spare) != 0 { unlink(path) }
    }

    /// The board's points below `through` are sealed (call after the seal's commit).
    func sealed(sessionID: String, board: String, through: Int) {
        state.withLock { state in
            let key = Key(session: sessionID, board: board)
            state.sealed[key] = max(state.sealed[key] ?? 0, through)
            dropUnneeded(&state)
        }
    }

    /// The session no longer records (stopped or deleted; call after the commit): its records
    /// are no longer needed.
    func ended(sessionID: String) {
        state.withLock { state in
            state.ended.insert(sessionID)
            dropUnneeded(&state)
        }
    }

    /// No session records any more (recovery sealed them): every file goes.
    func dropAll() {
        state.withLock { state in
            if let current = state.current { close(current.descriptor) }
            state.current = nil
            for generation in state.files.keys { retire(generation: generation) }
            state.files = [:]
        }
    }

    private func isNeeded(_ segment: StoredSegment, _ state: State) -> Bool {
        guard !state.ended.contains(segment.sessionID) else { return false }
        return segment.end > state.sealed[Key(session: segment.sessionID, board: segment.board)] ?? 0
    }

    /// Deletes every file none of whose records is still needed (the current one too: the
    /// next append starts a new file).
    private func dropUnneeded(_ state: inout State) {
        for (generation, coverage) in state.files {
            let needed = coverage.ends.contains { key, end in
                !state.ended.contains(key.session) && end > state.sealed[key] ?? 0
            }
            guard !needed else { continue }
            if let current = state.current, current.generation == generation {
                close(current.descriptor)
                state.current = nil
            }
            retire(generation: generation)
            state.files[generation] = nil
        }
    }

    // MARK: Reading

    /// Point bytes in the files (what the disk budget counts).
    var storedBytes: Int64 {
        state.withLock { state in state.files.values.reduce(0) { $0 + $1.pointBytes } }
    }

    /// Number of files on disk (for tests and status).
    var fileCount: Int { state.withLock { $0.files.count } }

    /// The records of `sessionID`, oldest first.
    func segments(sessionID: String) -> [StoredSegment] {
        state.withLock { _ in Self.segments(databasePath: databasePath, sessionID: sessionID) }
    }

    /// The records of `sessionID` in the files of `databasePath` (also for a reader in another
    /// process: a record being written there reads as torn and is left out).
    static func segments(databasePath: String, sessionID: String) -> [StoredSegment] {
        files(databasePath: databasePath).flatMap { read(path: $0.path) }.filter { $0.sessionID == sessionID }
    }

    /// Point bytes in the files of `databasePath`.
    static func storedBytes(databasePath: String) -> Int64 {
        files(databasePath: databasePath).flatMap { read(path: $0.path) }.reduce(0) { $0 + Int64($1.points.count) }
    }

    /// The journal files of `databasePath` by generation, oldest first.
    static func files(databasePath: String) -> [(generation: Int, path: String)] {
        let url = URL(fileURLWithPath: databasePath)
        let prefix = url.lastPathComponent + "-segments-"
        let directory = url.deletingLastPathComponent().path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name -> (Int, String)? in
            guard name.hasPrefix(prefix), let generation = Int(name.dropFirst(prefix.count)) else { return nil }
            return (generation, directory + "/" + name)
        }.sorted { $0.0 < $1.0 }
    }

    static func path(_ databasePath: String, generation: Int) -> String {
        databasePath + "-segments-\(generation)"
    }

    /// A retired file kept to be written over by the next new one (never read).
    static func sparePath(_ databasePath: String) -> String {
        databasePath + "-segments-spare"
    }

    /// Every whole record of a file, up to the first torn or damaged one.
    static func read(path: String) -> [StoredSegment] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return decode([UInt8](data))
    }

    static func decode(_ bytes: [UInt8]) -> [StoredSegment] {
        var out: [StoredSegment] = []
        var offset = 0
        var fileSalt: UInt32?
        while offset + headerSize <= bytes.count, Array(bytes[offset..<offset + 4]) == magic {
            let length = Int(uint32(bytes[...], offset + 4))
            let start = offset + headerSize
            guard length <= bytes.count - start else { break }
            let body = bytes[start..<start + length]
            guard CRC32.checksum(Array(body)) == uint32(bytes[...], offset + 8), let (salt, decoded) = decodeBody(body),
                  salt == fileSalt ?? salt else { break }
            // The first record names the file's salt: a record of an earlier use of the file
            // (a recycled spare) has another and ends it.
            fileSalt = salt
            if case let .segment(segment) = decoded { out.append(segment) }
            offset = start + length
        }
        return out
    }

    static func encode(_ segment: StoredSegment, salt: UInt32, to bytes: inout [UInt8]) {
        var body: [UInt8] = [segment.held ? 2 : 1]
        body += withUnsafeBytes(of: salt.littleEndian, Array.init)
        for text in [segment.sessionID, segment.board, segment.timeSource] {
            let utf8 = Array(text.utf8.prefix(Int(UInt16.max)))
            body += withUnsafeBytes(of: UInt16(utf8.count).littleEndian, Array.init)
            body += utf8
        }
        let stride = SegmentPacking.stride(of: segment.points)
        body += withUnsafeBytes(of: Int64(segment.firstIndex).littleEndian, Array.init)
        body += withUnsafeBytes(of: UInt32(clamping: segment.pointCount).littleEndian, Array.init)
        body += withUnsafeBytes(of: UInt16(clamping: stride).littleEndian, Array.init)
        body += withUnsafeBytes(of: UInt32(clamping: segment.points.count).littleEndian, Array.init)
        body += SegmentPacking.pack(segment.points, stride: stride)
        appendRecord(body, to: &bytes)
    }

    /// Fills `bytes` (a write starting at file offset `offset`) up to the next 4 KiB boundary
    /// with a padding record. An fsynced append rewrites the file system block it starts in;
    /// ending each second's write on a block boundary means the next second starts a fresh
    /// block instead of writing the last one again.
    static func pad(_ bytes: inout [UInt8], startingAt offset: Int, salt: UInt32) {
        var room = (blockSize - (offset + bytes.count) % blockSize) % blockSize
        guard room > 0 else { return }
        if room < headerSize + 5 { room += blockSize }
        var body = [UInt8](repeating: 0, count: room - headerSize)
        withUnsafeBytes(of: salt.littleEndian) { body.replaceSubrange(1..<5, with: $0) }
        appendRecord(body, to: &bytes)
    }

    private static func appendRecord(_ body: [UInt8], to bytes: inout [UInt8]) {
        bytes += magic
        bytes += withUnsafeBytes(of: UInt32(body.count).littleEndian, Array.init)
        bytes += withUnsafeBytes(of: CRC32.checksum(body).littleEndian, Array.init)
        bytes += body
    }

    /// A record's body: a segment, `.padding`, or nil when it is not a body this version wrote.
    private enum Body {
        case segment(StoredSegment)
        case padding
    }

    /// A record body's salt and content.
    private static func decodeBody(_ body: ArraySlice<UInt8>) -> (UInt32, Body)? {
        guard body.count >= 5 else { return nil }
        let salt = uint32(body, body.startIndex + 1)
        var offset = body.startIndex
        switch body.first {
        case 0: return (salt, .padding)
        case 1, 2: break
        default: return nil
        }
        let held = body.first == 2
        offset += 5
        var texts: [String] = []
        for _ in 0..<3 {
            guard offset + 2 <= body.endIndex else { return nil }
            let length = Int(body[offset]) | Int(body[offset + 1]) << 8
            offset += 2
            guard offset + length <= body.endIndex else { return nil }
            texts.append(String(decoding: body[offset..<offset + length], as: UTF8.self))
            offset += length
        }
        guard offset + 18 <= body.endIndex else { return nil }
        var first: Int64 = 0
        for k in 0..<8 { first |= Int64(body[offset + k]) << (8 * k) }
        let count = uint32(body, offset + 8)
        let stride = Int(body[offset + 12]) | Int(body[offset + 13]) << 8
        let size = Int(uint32(body, offset + 14))
        offset += 18
        guard let points = SegmentPacking.unpack(body[offset...], stride: stride, count: size) else { return nil }
        return (salt, .segment(StoredSegment(sessionID: texts[0], board: texts[1], firstIndex: Int(first), pointCount: Int(count),
                                             timeSource: texts[2], points: points, held: held)))
    }

    private static func uint32(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    /// Writes all of `bytes` at `offset` and syncs the data; on failure cuts the file back to
    /// `offset`.
    private static func writeAll(_ bytes: [UInt8], descriptor: Int32, offset: Int, path: String, cutOnFailure: Bool = true) throws {
        var written = 0
        let failure: WriteError? = bytes.withUnsafeBytes { raw in
            while written < raw.count {
                let n = pwrite(descriptor, raw.baseAddress! + written, raw.count - written, off_t(offset + written))
                if n < 0 {
                    if errno == EINTR { continue }
                    return WriteError(operation: "write", path: path, code: errno)
                }
                written += n
            }
            return fdatasync(descriptor) == 0 ? nil : WriteError(operation: "fdatasync", path: path, code: errno)
        }
        if let failure {
            // Cut a torn record off, so the next write follows a whole one. (A spare being
            // written over keeps its size: what lies past the write has another salt.)
            if cutOnFailure { _ = ftruncate(descriptor, off_t(offset)) }
            throw failure
        }
    }

    /// Makes a new file's name durable (its directory entry), once per file.
    private static func syncDirectory(of path: String) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw WriteError(operation: "open directory", path: directory, code: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw WriteError(operation: "fsync directory", path: directory, code: errno) }
    }
}
