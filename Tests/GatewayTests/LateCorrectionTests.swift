import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A gap a board's flash log fills after the session's survey went in (issue 21): the walker
/// submits the survey while the board is still out of range, and the board comes back 30 s
/// later. Its samples up to the stop are sealed into the stopped session as correction chunks and
/// the session's records document is revised to name them (chunks queued first, then the record).
/// A board model logs and streams its 100 Hz gyro into a real buffer; its log is read when the
/// recorder asks, page by page.
@Suite("Flash log: a gap filled after the survey revises the record")
struct LateCorrectionTests {
    @Test("a board away at the stop, back 30 s after the survey: every sample up to the stop, the record revised")
    func awayAtTheStop() throws {
        try awayAtStop(seed: 61, nextSessionBeforeReturn: false)
    }

    @Test("the same with the next session recording when the board is back")
    func awayAtTheStopIntoTheNextSession() throws {
        try awayAtStop(seed: 62, nextSessionBeforeReturn: true)
    }

    // swiftlint:disable:next function_body_length
    func awayAtStop(seed: UInt64, nextSessionBeforeReturn: Bool) throws {
        print("LateCorrectionTests seed \(seed)")
        let buffer = try RestartableBuffer(label: "late-correction")
        defer { buffer.remove() }
        let store = try buffer.open()
        let controller = SessionController(store: store, timeBase: RestartableBuffer.timeBase)
        var (rng, now, trimmer) = (SeededRandom(seed: seed), Int64(0), BoardLogTrimmer())
        var rig = FlashLogReadoutRig.linkedMetaMotionR(tickAtPowerOn: 333_333, into: controller, board: "B", trimmer: &trimmer)
        let (gyro, decoder) = (FlashLogReadoutRig.gyro100, FlashLogReadoutRig.bmi160Decoder)
        let first = try controller.start(trigger: .controlAPI, now: 0)
        // Away from 5 s; the session stops at 7 s and its survey goes in at 7.5 s; the board is
        // back at 37.5 s, 30 s after the survey.
        let goneAt: Int64 = 5_000_000_000, stopAt: Int64 = 7_000_000_000, surveyAt: Int64 = 7_500_000_000
        let nextAt: Int64 = 20_000_000_000, backAt: Int64 = 37_500_000_000, end: Int64 = 60_000_000_000
        var away = false, back = false, stopped = false
        var record: RecordsDocument?
        var second: String?
        var indexAtStop = 0

        while now < end {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            if !away, now >= goneAt {
                away = true
                rig.goesAway(from: controller, board: "B", now: now)
            }
            if !stopped, now >= stopAt {
                stopped = true
                try controller.stop(trigger: .controlAPI, now: now)
                indexAtStop = Int(rig.board.state(.gyro).nextSampleIndex)
            }
            if record == nil, now >= surveyAt {
                #expect(controller.hasPendingCorrections(sessionID: first), "the gap still waits for the board")
                record = try controller.submitSurvey(.noHazard, sessionID: first, submittedAt: Date(timeIntervalSince1970: 1_800_000_008))
                // Uploaded at once: the correction revises a record already upstream.
                try store.markSent(try store.uploadCandidates(limit: 100, perSession: 100).map(\.id))
            }
            if nextSessionBeforeReturn, second == nil, now >= nextAt {
                second = try controller.start(trigger: .controlAPI, now: now)
            }
            if away, !back, now >= backAt {
                back = true
                rig.links(gyro: gyro, into: controller, board: "B", trimmer: &trimmer)
            }
            rig.stream(to: now, linkUp: !away || back, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
        }
        let submitted = try #require(record)
        #expect(!controller.isWaitingForRestartBackfill(board: "B"), "the gap is filled")
        try Self.checkRevised(store: store, controller: controller, session: first, submitted: submitted, board: "B",
                              throughIndex: indexAtStop)
    }

    /// The session's record (revised once the correction is in) names every chunk in seal order,
    /// its points are every sample up to `throughIndex` once, in time order, the correction's
    /// marked backfilled; the outbox (everything uploaded at the survey) uploads the correction
    /// chunks, then the revised record; the journal is told.
    static func checkRevised(store: BufferStore, controller: SessionController, session: String, submitted: RecordsDocument,
                             board: String, throughIndex: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let dataset = try store.dataset(sessionID: session)
        let points = dataset.points.map(\.point)
        let indices = points.map(BackfillEndToEndTests.index)
        let revised = try #require(try store.recordsDocument(sessionID: session), sourceLocation: sourceLocation)
        let backfilled = points.filter(\.backfilled).count
        print("late correction: \(points.count) points (\(backfilled) backfilled), first \(indices.first ?? -1), "
              + "last \(indices.last ?? -1) (stop at \(throughIndex)), holes \(BackfillEndToEndTests.holes(points)); "
              + "record: \(submitted.gscopeData.count) chunks at the survey, \(revised.gscopeData.count) now, revision \(revised.revision)")
        #expect(revised.name == submitted.name, "one record per session", sourceLocation: sourceLocation)
        #expect(revised.gscopeData == dataset.chunkNames, "the record names every chunk, in seal order", sourceLocation: sourceLocation)
        #expect(Array(revised.gscopeData.prefix(submitted.gscopeData.count)) == submitted.gscopeData,
                "the new chunks after the old ones", sourceLocation: sourceLocation)
        #expect(revised.revision > 0 && revised.revisedAt != nil, "marked revised", sourceLocation: sourceLocation)
        #expect(revised.pointCount == points.count, sourceLocation: sourceLocation)
        #expect(backfilled > 0, sourceLocation: sourceLocation)
        #expect(BackfillEndToEndTests.holes(points).isEmpty, "every sample once, in time order", sourceLocation: sourceLocation)
        #expect(Set(indices).count == indices.count, "no sample twice", sourceLocation: sourceLocation)
        #expect((indices.last ?? 0) >= throughIndex - 2, "up to the stop: \(indices.last ?? 0) of \(throughIndex)",
                sourceLocation: sourceLocation)
        let queued = try store.uploadCandidates(limit: 100, perSession: 100).filter { $0.sessionID == session }
        #expect(queued.last?.kind == .records, "the revised record after the chunks it names", sourceLocation: sourceLocation)
        #expect(queued.filter { $0.kind == .realtimeData }.map(\.documentName) == Array(revised.gscopeData.dropFirst(submitted.gscopeData.count)),
                "what the record had named is uploaded already; the correction chunks are queued", sourceLocation: sourceLocation)
        #expect(queued.filter { $0.kind == .records }.count == 1, "one upload of the record", sourceLocation: sourceLocation)
        let revisions = controller.takeRevisions()
        #expect(revisions.map(\.sessionID) == [session] && revisions.map(\.board) == [board], "\(revisions)",
                sourceLocation: sourceLocation)
        #expect(revisions.first?.samples ?? 0 > 0, sourceLocation: sourceLocation)
    }
}
