import Basics
import Foundation
import GRDB
import Recording
@testable import Buffer

/// A fresh state directory under the temp dir, removed by the caller when done.
func temporaryDirectory() -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-buffer-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// A settable clock for retention and ages.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Date
    init(_ start: Date) { value = start }
    var now: Date { lock.withLock { value } }
    func advance(_ seconds: Double) { lock.withLock { value = value.addingTimeInterval(seconds) } }
}

func openStore(_ dir: String, budget: DiskBudget = DiskBudget(maxBytes: 1 << 40, minFreeBytes: 0), clock: TestClock? = nil,
               log: @escaping @Sendable (String) -> Void = { _ in }) throws -> BufferStore {
    let clock = clock ?? TestClock(Date(timeIntervalSince1970: 1_800_000_000))
    return try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                           configuration: .init(userID: "GATEWAY-UUID", budget: budget, days: .utc,
                                                log: log, now: { clock.now }))
}

/// `n` points starting at epoch ms `t0`, walking north, x = index.
func points(_ n: Int, t0: Double, startIndex: Int = 0) -> [RecordedPoint] {
    (0..<n).map { i in
        let t = t0 + Double(i) * 10
        return RecordedPoint(gyroscope: GyroReading(x: Float(startIndex + i), y: 1, z: 2, timestamp: t),
                             location: PointLocation(latitude: 47 + t / 1e9, longitude: 8, timestamp: t, accuracy: 3, age: 0))
    }
}

/// Records a whole session straight into the store: `chunks` chunks of `size` points.
@discardableResult
func recordSession(_ store: BufferStore, id: String = UUID().uuidString, start: Double, chunks: Int, size: Int = 2000,
                   board: String = "B1", submit: HazardSurvey? = nil, missedPerChunk: Int = 0) throws -> String {
    try store.beginSession(SessionStart(sessionID: id, startedAt: start, trigger: .controlAPI))
    var t = start
    for seq in 0..<chunks {
        let p = points(size, t0: t, startIndex: seq * size)
        try store.seal(ChunkToSeal(sessionID: id, board: board, seq: seq, bytes: PointCodec.encode(p), pointCount: size,
                                   firstTimestamp: p.first!.gyroscope.timestamp, lastTimestamp: p.last!.gyroscope.timestamp,
                                   timeSource: .systemClockSynchronised, missedSamples: missedPerChunk))
        t += Double(size) * 10
    }
    try store.endSession(SessionEnd(sessionID: id, endedAt: t, trigger: .controlAPI, boards: [board], pointCount: chunks * size,
                                    distance: 12.5, timeSource: .systemClockSynchronised))
    if let submit { try store.submitSurvey(sessionID: id, survey: submit, submittedAt: Date(timeIntervalSince1970: t / 1000)) }
    return id
}

/// A database file of an older schema, made as `BufferStore` makes one (incremental
/// auto-vacuum) and migrated up to `migration` (every migration when nil); `fill` writes its
/// rows in one transaction. Closed on return, ready for a `BufferStore` to open.
func writeOldDatabase(_ path: String, upTo migration: String?, _ fill: (Database) throws -> Void) throws {
    let queue = try DatabaseQueue(path: path)
    try queue.writeWithoutTransaction { db in
        try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
        try db.execute(sql: "VACUUM")
    }
    if let migration { try BufferStore.migrator.migrate(queue, upTo: migration) } else { try BufferStore.migrator.migrate(queue) }
    try queue.write(fill)
}
