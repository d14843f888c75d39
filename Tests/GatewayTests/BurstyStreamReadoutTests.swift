import Basics
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A healthy 100 Hz stream under the real-BlueZ VM's arrival pattern, with the readouts a session
/// makes (issues 18 §2.6, 21; VM session group at cbb2391, board 0 on the StartNotify path): its
/// notifications came in bursts 0.02-0.5 s apart whose delay wandered between 0 and 0.8 s for
/// seconds at a time, and stepped up 0.24-0.6 s for longer than the loss's 5 s confirmation.
/// Those steps were taken for losses, the flash log's readouts cleared them after the delay had
/// ended, and from then on the stream was stamped at ~105 Hz: 1.7 s before the board sent its
/// sample by the session's end, four false marks, and the log's samples after the stop, placed
/// by its ticks, not recognised as twins of those early points (48 stored twice).
///
/// What a user needs, per sample: its time never before the board sent it (beyond
/// ``earliest``), stored once, no mark where nothing is missing, and a true loss still marked.
@Suite("Flash log: a bursty healthy stream keeps the board's times")
struct BurstyStreamReadoutTests {
    /// How far a stamp may lie before its sample's send time, ms. A notification never arrives
    /// before its samples were sent, so the lower envelope of the arrivals lies on the send times
    /// up to its fit's error: the healthy runs in the VM (docs/bluez-vm.md) stamped −32..+13 ms
    /// of mwsim's send times, where the send times themselves (first send + index × period) and
    /// the arrivals' floor wander by about a connection interval. Here the board model's send
    /// times are exact, and the arrivals come 0-30 ms after them at best: a connection interval's
    /// worth of jitter.
    static let earliest = -30.0

    struct Outcome {
        var points: [RecordedPoint]
        /// stored time − the time the board sent the sample, ms, by sample index.
        var errors: [(index: Int, milliseconds: Double)]
        var samplesTaken: Int
    }

    /// Records `seconds` of a board model's 100 Hz gyro whose notifications come in bursts
    /// 0.02-0.5 s apart (seeded), each with the samples the board took until 0-30 ms before it
    /// and `extraLag(t)` more; those taken in `dropped` (seconds) never arrive. With `backfill`
    /// the board logs, its log's streamed part is read every 10 s and a gap's log when the
    /// recorder asks; without, nothing is read. Stops and lets the stop's readouts run.
    func record(seed: UInt64, seconds: Double, backfill: Bool, dropped: Range<Double>? = nil,
                extraLag: (Double) -> Int64) throws -> Outcome {
        print("BurstyStreamReadoutTests seed \(seed)")
        let buffer = try RestartableBuffer(label: "bursty-stream")
        defer { buffer.remove() }
        let store = try buffer.open()
        let controller = SessionController(store: store, timeBase: RestartableBuffer.timeBase)
        var (rng, now, trimmer) = (SeededRandom(seed: seed), Int64(0), BoardLogTrimmer())
        var rig = FlashLogReadoutRig.linkedMetaMotionR(tickAtPowerOn: 555_555, into: controller, board: "B", trimmer: &trimmer)
        if backfill { rig.readsStreamedPartAt = 100 } else { controller.expectBackfill(board: "B", false) }
        let decoder = FlashLogReadoutRig.bmi160Decoder
        let session = try controller.start(trigger: .controlAPI, now: 0)
        let stopAt = Int64(seconds * 1e9), end = stopAt + 20_000_000_000
        var (stopped, taken) = (false, 0)
        while now < end {
            now += Int64(Double.random(in: 0.02e9...0.5e9, using: &rng))
            let lag = Int64(Double.random(in: 0...30e6, using: &rng)) + extraLag(Double(now) / 1e9)
            let sentUpTo = Double(max(Int64(rig.board.nanoseconds), now - lag)) / 1e9
            rig.stream(to: now, lag: lag, linkUp: true, losesSamples: dropped?.contains(sentUpTo) ?? false, into: controller, board: "B",
                       decoder: decoder, trimmer: &trimmer)
            if !stopped, now >= stopAt {
                stopped = true
                try controller.stop(trigger: .controlAPI, now: now)
                taken = Int(rig.board.state(.gyro).nextSampleIndex)
            }
        }
        let points = try store.dataset(sessionID: session).points.map(\.point).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        let run = try #require(rig.board.measured.runs[.gyro]?.first)
        let period = Double(run.lastNanoseconds - run.firstNanoseconds) / Double(run.last - run.first)
        let errors = points.map { p -> (Int, Double) in
            let index = BackfillEndToEndTests.index(p)
            let board = Double(run.firstNanoseconds) + period * (Double(index) - Double(run.first))
            return (index, p.gyroscope.timestamp - RestartableBuffer.timeBase.epochMilliseconds(monotonic: Int64(board)))
        }
        return Outcome(points: points, errors: errors, samplesTaken: taken)
    }

    /// Latency steps the timestamper takes for losses, each over before its readout: 0.35 s from
    /// 12 s to 21 s, 0.6 s from 30 s to 36 s, 0.25 s from 47 s to 55 s (the VM session group's
    /// board 0 at cbb2391: marks cleared by the log at 19 s and 32 s, then 14-35 sample marks).
    static func steps(_ t: Double) -> Int64 {
        switch t {
        case 12..<21: 350_000_000
        case 30..<36: 600_000_000
        case 47..<55: 250_000_000
        default: 0
        }
    }

    /// Latency that wanders for seconds at a time (seeded): rises of 0.1-0.8 s lasting 0.5-4 s
    /// (under the loss's 5 s confirmation), each back to the floor for 0.5-3 s (the VM at load 7).
    static func wandering(seed: UInt64, seconds: Double) -> (Double) -> Int64 {
        var rng = SeededRandom(seed: seed &+ 1000)
        var levels: [(until: Double, lag: Int64)] = []
        var t = 0.0
        while t < seconds + 30 {
            t += Double.random(in: 0.5...3, using: &rng)
            levels.append((t, 0))
            t += Double.random(in: 0.5...4, using: &rng)
            levels.append((t, Int64(Double.random(in: 0.1e9...0.8e9, using: &rng))))
        }
        return { now in levels.first { now < $0.until }?.lag ?? 0 }
    }

    /// What a user needs of `o`, printed with its numbers: no stamp before its sample was sent
    /// (beyond ``earliest``), no sample twice, and no mark where nothing is missing (`lost`: the
    /// samples that never arrived and the log did not fill: marked with their count). Without a
    /// log (`marksChecked` false) a stretch whose notifications all came a period or more late
    /// for the loss's 5 s confirmation is a loss by all the stream shows: its marks stay.
    func check(_ o: Outcome, lost: Range<Int>? = nil, marksChecked: Bool = true) {
        let indices = o.points.map(BackfillEndToEndTests.index)
        let marks = o.points.filter { $0.missedBefore > 0 }.map { (BackfillEndToEndTests.index($0), $0.missedBefore) }
        let early = o.errors.min { $0.milliseconds < $1.milliseconds }
        let sorted = o.errors.map(\.milliseconds).sorted()
        print("bursty stream: \(o.points.count) points of \(o.samplesTaken) taken, \(indices.count - Set(indices).count) twice, "
              + "marks \(marks.map { "\($0.0): \($0.1)" }), stamp − send: earliest \(early.map { "\($0.milliseconds) ms at \($0.index)" } ?? "-"), "
              + "median \(sorted.isEmpty ? 0 : sorted[sorted.count / 2]) ms, latest \(sorted.last ?? 0) ms")
        #expect(Set(indices).count == indices.count, "no sample twice: \(indices.count - Set(indices).count) twice")
        #expect((early?.milliseconds ?? 0) >= Self.earliest, "no stamp before its sample was sent: \(String(describing: early))")
        let holes = BackfillEndToEndTests.holes(o.points)
        if let lost {
            let expected = "\(lost.lowerBound - 1)->\(lost.upperBound)"
            #expect(holes == [expected], "the samples lost, and no other, missing: \(holes)")
            let atTheLoss = marks.filter { $0.0 == lost.upperBound }
            #expect(atTheLoss.count == 1 && atTheLoss.allSatisfy { abs($0.1 - lost.count) <= 1 },
                    "the loss marked where it is with its count \(lost.count): \(marks)")
            #expect(marks.count == 1 || !marksChecked, "no other mark: \(marks)")
        } else {
            #expect(holes.isEmpty, "every sample once, in time order: \(holes)")
            #expect(marks.isEmpty || !marksChecked, "no mark where nothing is missing: \(marks)")
        }
    }

    @Test("70 s of bursts with latency steps that end before their readouts: no stamp before its sample, nothing twice, no mark",
          arguments: [81, 82, 83] as [UInt64])
    func latencyStepsWithReadouts(seed: UInt64) throws {
        check(try record(seed: seed, seconds: 70, backfill: true, extraLag: Self.steps))
    }

    @Test("70 s of bursts whose latency wanders for seconds, with the log: no stamp before its sample, nothing twice, no mark",
          arguments: [84, 85, 86] as [UInt64])
    func wanderingLatency(seed: UInt64) throws {
        check(try record(seed: seed, seconds: 70, backfill: true, extraLag: Self.wandering(seed: seed, seconds: 70)))
    }

    @Test("70 s of bursts whose latency wanders for seconds, without a log: the fit alone does not drift, nothing twice",
          arguments: [84, 85, 86] as [UInt64])
    func wanderingLatencyWithoutALog(seed: UInt64) throws {
        check(try record(seed: seed, seconds: 70, backfill: false, extraLag: Self.wandering(seed: seed, seconds: 70)), marksChecked: false)
    }

    /// 0.6 s of the stream's notifications never arrive (the samples the board sent from 40 s
    /// on, up to the next burst after 40.6 s), in bursts with jitter only.
    func recordATrueLoss(seed: UInt64, backfill: Bool) throws -> (Outcome, lost: Range<Int>) {
        let o = try record(seed: seed, seconds: 70, backfill: backfill, dropped: 40.0..<40.6) { _ in 0 }
        let indices = Set(o.points.map(BackfillEndToEndTests.index))
        let taken = Set(0..<o.samplesTaken)
        let notArrived = backfill ? [] : taken.subtracting(indices).filter { $0 < (indices.max() ?? 0) }.sorted()
        return (o, (notArrived.first ?? 0)..<((notArrived.last ?? -1) + 1))
    }

    @Test("a true loss of 0.6 s of bursts: filled from the log, or marked where it is with its count without one",
          arguments: [(88, true), (88, false)] as [(UInt64, Bool)])
    func aTrueLoss(seed: UInt64, backfill: Bool) throws {
        let (o, lost) = try recordATrueLoss(seed: seed, backfill: backfill)
        if backfill { check(o) } else { check(o, lost: lost, marksChecked: false) }
    }

    /// The same loss where the timestamper places it late: where the notifications after it
    /// first all sit its count above the envelope, which in bursts 0.02-0.5 s apart with 0-30 ms
    /// of jitter came 0.9 s after the hole (seed 87: 46 samples lost after 3993, marked at 4086,
    /// the 46 between stamped up to 0.48 s early, on main as here); with a log the hole is
    /// filled, and those 46 stay early. Not fixed yet (issue 21): pinned here so the fix shows.
    @Test("a true loss placed late in bursts (known: the samples between it and its mark stamped early)",
          arguments: [true, false])
    func aTrueLossPlacedLate(backfill: Bool) throws {
        let (o, lost) = try recordATrueLoss(seed: 87, backfill: backfill)
        withKnownIssue("a loss in bursts is placed late") {
            if backfill { check(o) } else { check(o, lost: lost, marksChecked: false) }
        }
    }
}
