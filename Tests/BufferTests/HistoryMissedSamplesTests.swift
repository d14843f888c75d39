import Foundation
import Recording
import Testing
@testable import Buffer

@Suite("History counts samples missed in gaps")
struct HistoryMissedSamplesTests {
    /// Seals one chunk of 100 points with `missed` samples missing before its points.
    func seal(_ store: BufferStore, _ session: String, seq: Int, missed: Int, board: String = "B1") throws {
        let p = points(100, t0: 1_800_000_000_000 + Double(seq) * 1000, startIndex: seq * 100)
        try store.seal(ChunkToSeal(sessionID: session, board: board, seq: seq, bytes: PointCodec.encode(p), pointCount: 100,
                                   firstTimestamp: p[0].gyroscope.timestamp, lastTimestamp: p[99].gyroscope.timestamp,
                                   timeSource: .systemClockSynchronised, missedSamples: missed))
    }

    @Test("missed samples show live while recording, stay after the stop and survey, and leave with a deleted session")
    func missedSamplesPerDay() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try store.beginSession(SessionStart(sessionID: "S", startedAt: 1_800_000_000_000, trigger: .controlAPI))
        try seal(store, "S", seq: 0, missed: 0)
        try seal(store, "S", seq: 1, missed: 3)
        try seal(store, "S", seq: 0, missed: 860, board: "B2")
        #expect(try store.history().map(\.missedSamples) == [863])
        #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
        try store.endSession(SessionEnd(sessionID: "S", endedAt: 1_800_000_002_000, trigger: .controlAPI, boards: ["B1", "B2"],
                                        pointCount: 300, distance: 0, timeSource: .systemClockSynchronised))
        #expect(try store.history().map(\.missedSamples) == [863])
        // A late chunk (recovery seals into a stopped session) adds its missed samples.
        try seal(store, "S", seq: 2, missed: 1)
        #expect(try store.history().map(\.missedSamples) == [864])
        _ = try recordSession(store, id: "T", start: 1_800_000_100_000, chunks: 2, size: 50, submit: .noHazard, missedPerChunk: 10)
        #expect(try store.history().map(\.missedSamples) == [884])
        #expect(try store.history().map(\.lost) == [0])
        #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
        // A reopened store reads the same index.
        #expect(try openStore(dir).history().map(\.missedSamples) == [884])
        try store.deleteSession("S")
        #expect(try store.history().map(\.missedSamples) == [20])
        #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
    }

    @Test("a day's walking minutes recounted from the sessions equal the index's to the last digit")
    func walkingMinutesRecountedExactly() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        // 10 ms and 40 ms: 10/60,000 + 40/60,000 is not 50/60,000 in binary floating point.
        _ = try recordSession(store, id: "A", start: 1_800_000_000_000, chunks: 1, size: 1)
        _ = try recordSession(store, id: "B", start: 1_800_000_100_000, chunks: 1, size: 4)
        #expect(try store.history().map(\.walkingMinutes) == [50.0 / 60_000])
        #expect(try store.historyFromScratch().map(\.walkingMinutes) == store.history().map(\.walkingMinutes))
    }
}
