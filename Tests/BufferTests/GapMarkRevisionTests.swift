import Foundation
import Recording
import Testing
@testable import Buffer

/// A board's flash log fills a gap whose next point was already sealed with the gap's mark
/// (issue 21: recovery sealed a link drop's held points, a stop committed its held points): the
/// point's mark is counted again and the chunk that holds it revised in place, uploaded again.
@Suite("Buffer: chunks revised for a gap mark the log corrected")
struct GapMarkRevisionTests {
    /// A session of three chunks of 100 points, the second one's point 50 marked with 49 missing
    /// (a 0.5 s link drop); everything uploaded, the survey in.
    static func markedSession(_ store: BufferStore) throws -> (id: String, marked: Double) {
        let id = "S"
        try store.beginSession(SessionStart(sessionID: id, startedAt: 1_800_000_000_000, trigger: .controlAPI))
        var marked = 0.0
        for seq in 0..<3 {
            var p = points(100, t0: 1_800_000_000_000 + Double(seq) * 1000, startIndex: seq * 100)
            if seq == 1 {
                p[50].missedBefore = 49
                p[50].gapMilliseconds = 500
                marked = p[50].gyroscope.timestamp
            }
            try store.seal(ChunkToSeal(sessionID: id, board: "B1", seq: seq, bytes: PointCodec.encode(p), pointCount: 100,
                                       firstTimestamp: p.first!.gyroscope.timestamp, lastTimestamp: p.last!.gyroscope.timestamp,
                                       timeSource: .systemClockSynchronised, missedSamples: p.reduce(0) { $0 + $1.missedBefore }))
        }
        try store.endSession(SessionEnd(sessionID: id, endedAt: 1_800_000_003_000, trigger: .controlAPI, boards: ["B1"],
                                        pointCount: 300, distance: 0, timeSource: .systemClockSynchronised))
        try store.submitSurvey(sessionID: id, survey: .noHazard, submittedAt: Date(timeIntervalSince1970: 1_800_000_010))
        return (id, marked)
    }

    @Test("the revised chunk keeps its name and place, says 0 missing, counts in history, and goes up again as a replacement")
    func revisedAfterUpload() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let (id, marked) = try Self.markedSession(store)
        let record = try #require(try store.recordsDocument(sessionID: id))
        try store.markSent(store.uploadCandidates(limit: 10, perSession: 10).map(\.id))
        #expect(try store.history().first?.missedSamples == 49)

        try store.reviseGapMarks(sessionID: id, board: "B1", [GapMark(timestamp: marked, missedBefore: 0, gapMilliseconds: 0)])

        let dataset = try store.dataset(sessionID: id)
        #expect(dataset.points.allSatisfy { $0.point.missedBefore == 0 && $0.point.gapMilliseconds == 0 }, "no point marks the gap")
        #expect(dataset.points.count == 300)
        #expect(dataset.chunkNames == record.gscopeData, "the chunks keep their seal order")
        #expect(try store.recordsDocument(sessionID: id)?.gscopeData == record.gscopeData)
        #expect(try store.history().first?.missedSamples == 0, "history's LOST follows")
        #expect(try store.historyFromScratch().first?.missedSamples == 0)
        #expect(!SessionExporter.render(dataset, format: .geojson).contains("missed_before"), "the export shows no gap")

        let queued = try store.uploadCandidates(limit: 10, perSession: 10)
        #expect(queued.map(\.documentName) == [record.gscopeData[1]], "only the revised chunk goes up again")
        let document = try #require(try store.realtimeDocument(name: record.gscopeData[1]))
        #expect(document.revised, "it replaces the stored document")
        #expect(document.points.allSatisfy { $0.missedBefore == 0 })
        #expect(try store.realtimeDocument(name: record.gscopeData[0])?.revised == false)
        try store.markSent(queued.map(\.id))
        #expect(try store.backlogStats().count == 0)
    }

    @Test("an upload of the old version under way cannot mark the revision sent")
    func oldVersionInFlight() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let (id, marked) = try Self.markedSession(store)
        let taken = try store.nextBatch(limit: 10, perSession: 10)
        try store.reviseGapMarks(sessionID: id, board: "B1", [GapMark(timestamp: marked, missedBefore: 3, gapMilliseconds: 40)])
        try store.markSent(taken.map(\.id))
        let queued = try store.uploadCandidates(limit: 10, perSession: 10)
        #expect(queued.count == 1, "the revision still goes up")
        #expect(try store.history().first?.missedSamples == 3, "what the log did not have stays marked")
        let point = try #require(try store.dataset(sessionID: id).points.first { $0.point.gyroscope.timestamp == marked })
        #expect(point.point.missedBefore == 3 && point.point.gapMilliseconds == 40)
    }

    /// The mark was a delay the log showed (issues 18 §2.6, 21): the points from it on were
    /// stamped late, and the log moves them back; the sealed chunks follow, their first and
    /// last times too (a later revision finds a moved point by its new time).
    @Test("points the log moves back get their new times, and their chunks' spans follow")
    func movedPoints() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let (id, marked) = try Self.markedSession(store)
        let stored = try store.dataset(sessionID: id).points.map(\.point).filter { $0.gyroscope.timestamp >= marked }
        let moves = stored.map {
            GapMark(timestamp: $0.gyroscope.timestamp, missedBefore: 0, gapMilliseconds: 0, movedTo: $0.gyroscope.timestamp - 7)
        }
        try store.reviseGapMarks(sessionID: id, board: "B1", moves)
        let points = try store.dataset(sessionID: id).points.map(\.point)
        #expect(points.count == 300 && points.allSatisfy { $0.missedBefore == 0 }, "no point marks the gap")
        #expect(zip(points, points.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order")
        #expect(points.filter { $0.gyroscope.timestamp >= marked - 7 }.map(\.gyroscope.timestamp) == moves.compactMap(\.movedTo))
        #expect(try store.history().first?.missedSamples == 0)
        // The last chunk's first point, by its new time.
        let first = try #require(moves.first { $0.timestamp >= 1_800_000_002_000 }?.movedTo)
        try store.reviseGapMarks(sessionID: id, board: "B1", [GapMark(timestamp: first, missedBefore: 2, gapMilliseconds: 30)])
        #expect(try store.history().first?.missedSamples == 2, "found by its new time")
    }

    @Test("a mark that is already right, or a time no point has, revises nothing")
    func nothingToRevise() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let (id, marked) = try Self.markedSession(store)
        try store.markSent(store.uploadCandidates(limit: 10, perSession: 10).map(\.id))
        try store.reviseGapMarks(sessionID: id, board: "B1", [GapMark(timestamp: marked, missedBefore: 49, gapMilliseconds: 500),
                                                              GapMark(timestamp: marked + 5, missedBefore: 0, gapMilliseconds: 0)])
        #expect(try store.uploadCandidates(limit: 10, perSession: 10).isEmpty)
        #expect(try store.history().first?.missedSamples == 49)
    }
}
