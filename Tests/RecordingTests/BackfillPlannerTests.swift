import Basics
import MetaWear
import Testing
@testable import Recording

/// A board that streams over a batching link (with gaps) and logs every sample to flash with
/// its own tick crystal: what the planner gets, and the truth to check it against.
struct LoggingBoard {
    var streamed: [BackfillPlanner.StreamedSample] = []
    var logged: [LoggedSample] = []
    /// True sample times by index.
    var truth: [Int64] = []
    var values: [RawVector] = []
    /// Sample index of each streamed sample.
    var streamedIndices: Set<Int> = []
    /// Sample index of each streamed sample, in the order of `streamed`.
    var streamedOrder: [Int] = []
    /// Tick 0 of each boot on the host clock.
    var boots: [UInt8: Int64] = [:]
    var tickIndex: [UInt8: [UInt32: Int]] = [:]

    /// `dropped(n)` loses streamed sample n; samples from `resetAt` on belong to a new boot whose
    /// sensor only starts again at `resumeAt` (the gateway restarts it after reconnecting);
    /// `pauses[n]` is how much later than its pace sample n comes, because the sensor was
    /// stopped and started again before it (a stream restart), which moves every later sample;
    /// `latency(n)` is how long sample n waits on the board for its link (``simulateLink``).
    init(seed: UInt64, rate: Double = 100, seconds: Double, imuPPM: Double, tickPPM: Double,
         dropped: @escaping (Int) -> Bool, reset: (at: Int, resumeAt: Int)? = nil, pauses: [Int: Int64] = [:],
         latency: (Int) -> Int64 = { _ in 0 }) {
        var rng = SeededRandom(seed: seed ^ 0xABCD)
        let link = simulateLink(rate: rate, seconds: seconds, perNotification: 1, clockErrorPPM: imuPPM, seed: seed,
                                drop: { n in dropped(n) || reset.map { (n >= $0.at && n < $0.resumeAt) } == true }, latency: latency)
        var index = 0
        var stamper = SampleTimestamper<Int>(configuration: .init(rateHertz: rate))
        var stamped: [SampleTimestamper<Int>.Stamped] = []
        for notification in link {
            index += notification.lostBefore
            truth.append(contentsOf: Array(repeating: 0, count: notification.lostBefore))
            truth.append(notification.truth[0])
            stamped += stamper.add(index, count: 1, receivedAt: notification.receivedAt)
            index += 1
        }
        stamped += stamper.flush()
        // Lost samples, also those after the last streamed one, lie on the board's even pace.
        let period = 1e9 / rate * (1 + imuPPM * 1e-6)
        let t0 = Double(link[0].truth[0])
        let shift = { (n: Int) in pauses.filter { $0.key <= n }.values.reduce(0, +) }
        truth = (0..<Int(seconds * rate)).map { Int64(t0 + period * Double($0)) + shift($0) }
        // Mostly distinct counts, with stationary runs of one repeated value.
        values = truth.indices.map { n in
            n % 500 < 100 ? RawVector(x: 0, y: -3, z: 2048)
                : RawVector(x: .random(in: .min ... .max, using: &rng), y: .random(in: .min ... .max, using: &rng),
                            z: .random(in: .min ... .max, using: &rng))
        }
        for s in stamped {
            streamed.append(.init(time: s.times[0] + shift(s.payload), raw: values[s.payload]))
            streamedIndices.insert(s.payload)
            streamedOrder.append(s.payload)
        }
        boots[5] = Int64(t0) - 3_600_000_000_000
        if let reset { boots[6] = truth[reset.at] + 200_000_000 }
        for n in truth.indices {
            let uid: UInt8 = reset.map { n >= $0.at } == true ? 6 : 5
            if let reset, n >= reset.at, n < reset.resumeAt { continue }
            let ticks = Double(truth[n] - boots[uid]!) * (1 + tickPPM * 1e-6) / (BoardTicks.millisecondsPerTick * 1e6)
            let tick = UInt32(truncatingIfNeeded: Int64(ticks.rounded(.down)))
            logged.append(LoggedSample(resetUID: uid, tick: tick, raw: values[n]))
            tickIndex[uid, default: [:]][tick] = n
        }
    }

    func index(of sample: BackfillPlanner.Backfilled) -> Int? { tickIndex[sample.resetUID]?[sample.tick] }

    /// Gives the streamed samples `indices` other times, `time(index, time)` (a stream stamped
    /// off next to a link drop).
    mutating func restamp(_ indices: Range<Int>, _ time: (Int, Int64) -> Int64) {
        for (k, n) in streamedOrder.enumerated() where indices.contains(n) { streamed[k].time = time(n, streamed[k].time) }
    }

    /// The sample indices of the stream and a plan's backfilled samples together, in time order.
    func merged(_ plan: BackfillPlanner.Plan) -> [Int] {
        let all = zip(streamed.map(\.time), streamedOrder).map { ($0, $1) } + plan.backfilled.compactMap { b in index(of: b).map { (b.time, $0) } }
        return all.sorted { $0.0 < $1.0 }.map(\.1)
    }
}

@Suite("Backfill from the flash log")
struct BackfillPlannerTests {
    /// Checks a plan against the truth: every sample once, values as logged, times in order,
    /// and returns the backfilled samples' errors in ms.
    private func check(_ plan: BackfillPlanner.Plan, _ board: LoggingBoard, seed: UInt64) -> [Double] {
        var seen = board.streamedIndices
        var errors: [Double] = []
        var last = Int64.min
        for sample in plan.backfilled {
            #expect(sample.time > last, "seed \(seed): out of order")
            last = sample.time
            guard let n = board.index(of: sample) else { Issue.record("seed \(seed): unknown tick"); continue }
            #expect(seen.insert(n).inserted, "seed \(seed): sample \(n) twice")
            #expect(sample.raw == board.values[n], "seed \(seed): sample \(n) value")
            errors.append(abs(Double(sample.time - board.truth[n])) / 1e6)
        }
        return errors
    }

    @Test("an 8 s link drop and short losses are filled: each sample once, median error < 1 ms",
          arguments: [UInt64(11), 12, 13])
    func fillsGaps(seed: UInt64) {
        print("BackfillPlannerTests.fillsGaps seed \(seed)")
        let gap = 4000..<4800
        let board = LoggingBoard(seed: seed, seconds: 120, imuPPM: -150, tickPPM: 40,
                                 dropped: { gap.contains($0) || [700, 701, 9000].contains($0) })
        let planner = BackfillPlanner(nominalPeriod: 10_000_000, bootOrigins: [5: board.boots[5]! + 30_000_000])
        let plan = planner.plan(streamed: board.streamed, logged: board.logged)
        let errors = check(plan, board, seed: seed)
        #expect(plan.backfilled.count == board.truth.count - board.streamed.count, "seed \(seed)")
        #expect(plan.alreadyStreamed == board.streamed.count, "seed \(seed)")
        // Sample 9000 is one of a stationary run: where the stream stamped its neighbours a
        // period apart (the timestamper did not see one lost sample) the anchors cannot place
        // it between them, and the log's order does.
        #expect(plan.backfilled.allSatisfy { $0.placement == .betweenAnchors || $0.placement == .logOrder })
        let median = percentile(errors, 0.5)
        #expect(median < 1.0, "seed \(seed): median \(median) ms")
        #expect(percentile(errors, 0.99) < 3.0, "seed \(seed)")
        #expect((plan.medianAnchorError ?? .infinity) < 1_000_000, "seed \(seed): \(plan.medianAnchorError ?? -1) ns")
        print("fillsGaps seed \(seed): \(plan.backfilled.count) backfilled, median \(median) ms, leave-one-out \((plan.medianAnchorError ?? 0) / 1e6) ms")
    }

    @Test("the sensor restarted in the gap (stream restarts): every sample once, none dropped as a collision",
          arguments: [UInt64(51), 52, 53])
    func sensorRestartsInTheGap(seed: UInt64) {
        print("BackfillPlannerTests.sensorRestartsInTheGap seed \(seed)")
        // 8 s at 50 Hz lost; three restarts stop the sensor for 2.5, 3.5 and 6.5 periods, so the
        // board's phase moves by half a period each time and the log holds fewer samples
        // than the gap's periods.
        let gap = 1000..<1400
        let board = LoggingBoard(seed: seed, rate: 50, seconds: 60, imuPPM: 120, tickPPM: -30, dropped: { gap.contains($0) },
                                 pauses: [1100: 50_000_000, 1200: 70_000_000, 1300: 130_000_000])
        let plan = BackfillPlanner(nominalPeriod: 20_000_000).plan(streamed: board.streamed, logged: board.logged)
        let errors = check(plan, board, seed: seed)
        #expect(plan.backfilled.count == gap.count, "seed \(seed): \(plan.backfilled.count) backfilled")
        #expect(plan.collisions == 0, "seed \(seed)")
        let median = percentile(errors, 0.5)
        #expect(median < 1.0, "seed \(seed): median \(median) ms")
        #expect(percentile(errors, 0.99) < 3.0, "seed \(seed): p99 \(percentile(errors, 0.99)) ms")
        print("sensorRestartsInTheGap seed \(seed): \(plan.backfilled.count) backfilled, \(plan.collisions) collisions, median \(median) ms")
    }

    @Test("a new link's first points stamped 70 ms early: the gap's samples still go between its edges, each once",
          arguments: [UInt64(61), 62])
    func aNewLinkStampedEarlyLosesNothingOfTheGap(seed: UInt64) {
        print("BackfillPlannerTests.aNewLinkStampedEarlyLosesNothingOfTheGap seed \(seed)")
        // Soak seed 11, board 2: a 0.8 s link drop; the new link's timestamper starts from
        // nothing and puts its first second 70 ms early, easing to its true pace.
        let gap = 4200..<4280
        var board = LoggingBoard(seed: seed, seconds: 80, imuPPM: 90, tickPPM: -40, dropped: { gap.contains($0) })
        board.restamp(4280..<4380) { n, time in time - 70_000_000 * Int64(4380 - n) / 100 }
        let plan = checkGapFilledInOrder(board, gap: gap, seed: seed)
        #expect(plan.alreadyStreamed == board.streamed.count, "seed \(seed)")
    }

    @Test("a reconnect's first notifications as a burst of equal times: their logged twins are not added again",
          arguments: [UInt64(71), 72])
    func aBurstAfterAGapIsNotBackfilledTwice(seed: UInt64) {
        print("BackfillPlannerTests.aBurstAfterAGapIsNotBackfilledTwice seed \(seed)")
        // The first 8 samples after a 0.5 s gap come at once and are stamped together, up to
        // 70 ms after the board took them.
        let gap = 3200..<3250
        var board = LoggingBoard(seed: seed, seconds: 60, imuPPM: -60, tickPPM: 30, dropped: { gap.contains($0) })
        let burst = board.streamed[board.streamedOrder.firstIndex(of: 3257)!].time
        board.restamp(3250..<3258) { n, _ in burst + Int64(n - 3257) }
        checkGapFilledInOrder(board, gap: gap, seed: seed)
    }

    /// Plans `board`'s backfill (100 Hz) and checks that it adds exactly the samples of `gap`,
    /// each once, and that they and the stream together are in the board's order.
    @discardableResult
    private func checkGapFilledInOrder(_ board: LoggingBoard, gap: Range<Int>, seed: UInt64,
                                       sourceLocation: SourceLocation = #_sourceLocation) -> BackfillPlanner.Plan {
        let plan = BackfillPlanner(nominalPeriod: 10_000_000).plan(streamed: board.streamed, logged: board.logged)
        _ = check(plan, board, seed: seed)
        let indices = plan.backfilled.compactMap { board.index(of: $0) }
        #expect(indices == Array(gap), "seed \(seed): \(indices.count) backfilled, \(plan.collisions) collisions",
                sourceLocation: sourceLocation)
        let merged = board.merged(plan)
        #expect(zip(merged, merged.dropFirst()).allSatisfy { $0 < $1 }, "seed \(seed): in the board's order",
                sourceLocation: sourceLocation)
        return plan
    }

    @Test("the link never came back: the session's tail is extrapolated from the last anchors")
    func fillsTheTail() {
        let seed: UInt64 = 21
        print("BackfillPlannerTests.fillsTheTail seed \(seed)")
        let board = LoggingBoard(seed: seed, seconds: 60, imuPPM: 200, tickPPM: -60, dropped: { $0 >= 5000 })
        let plan = BackfillPlanner(nominalPeriod: 10_000_000).plan(streamed: board.streamed, logged: board.logged)
        let errors = check(plan, board, seed: seed)
        #expect(plan.backfilled.count == board.truth.count - 5000)
        #expect(plan.backfilled.allSatisfy { $0.placement == .extrapolated })
        #expect(percentile(errors, 0.5) < 1.0, "median \(percentile(errors, 0.5)) ms")
    }

    @Test("a reset in the gap: the old boot's samples are backfilled, the new boot's overlap the stream")
    func resetDuringTheGap() {
        let seed: UInt64 = 31
        print("BackfillPlannerTests.resetDuringTheGap seed \(seed)")
        let gap = 3000..<3600
        let board = LoggingBoard(seed: seed, seconds: 60, imuPPM: -80, tickPPM: 25, dropped: { gap.contains($0) },
                                 reset: (at: 3300, resumeAt: 3600))
        let plan = BackfillPlanner(nominalPeriod: 10_000_000).plan(streamed: board.streamed, logged: board.logged)
        let errors = check(plan, board, seed: seed)
        #expect(plan.backfilled.count == 300, "only what the board measured before it reset")
        #expect(plan.backfilled.allSatisfy { $0.resetUID == 5 })
        #expect(percentile(errors, 0.5) < 1.0, "median \(percentile(errors, 0.5)) ms")
    }

    @Test("samples outside the session, logged twice, or of a boot with neither anchor nor clock")
    func boundaries() {
        let seed: UInt64 = 41
        print("BackfillPlannerTests.boundaries seed \(seed)")
        let board = LoggingBoard(seed: seed, seconds: 30, imuPPM: 0, tickPPM: 0, dropped: { (1000..<1200).contains($0) })
        let start = board.truth[1100]
        var planner = BackfillPlanner(nominalPeriod: 10_000_000, sessionSpan: start...Int64.max)
        var logged = board.logged
        logged += board.logged[1150..<1160]  // a readout delivered twice
        logged.append(LoggedSample(resetUID: 2, tick: 77, raw: RawVector(x: 1, y: 2, z: 3)))
        let plan = planner.plan(streamed: board.streamed, logged: logged)
        #expect(plan.backfilled.count == 100, "\(plan.backfilled.count)")
        #expect(plan.outsideSession == 100, "\(plan.outsideSession)")
        #expect(plan.collisions == 10, "\(plan.collisions)")
        #expect(plan.unplaced == 1)
        _ = check(plan, board, seed: seed)
        // With that boot's clock read at connect, it is placed by the clock.
        planner.bootOrigins[2] = 1_000
        planner.sessionSpan = nil
        #expect(planner.plan(streamed: [], logged: [logged.last!]).backfilled.first?.placement == .boardClock)
    }

    @Test("a readout of a long healthy stretch: the samples from long before the streamed window and the gap are not planned, the gap's fill is the same")
    func samplesLongBeforeTheGapAreSkipped() {
        let seed: UInt64 = 51
        print("BackfillPlannerTests.samplesLongBeforeTheGapAreSkipped seed \(seed)")
        // Five minutes logged without a trim; the gateway keeps the last 2 min of the stream.
        let gap = 25_000..<25_800
        let board = LoggingBoard(seed: seed, seconds: 300, imuPPM: -90, tickPPM: 30, dropped: { gap.contains($0) })
        let window = board.streamed.filter { $0.time >= board.truth[16_000] }
        let planner = BackfillPlanner(nominalPeriod: 10_000_000, bootOrigins: [5: board.boots[5]! - 20_000_000])
        let earliest = window[0].time
        let reaching = planner.samples(board.logged, reaching: earliest)
        // Kept: from 11 s (origin tolerance and margin) before the window on, as far as the
        // clock read and the crystals' drift place it (0.2 s).
        #expect(abs(reaching.before - (16_000 - 1_100)) <= 20, "\(reaching.before) skipped")
        #expect(reaching.kept.count + reaching.before == board.logged.count)
        let all = planner.plan(streamed: window, logged: board.logged)
        let skipped = planner.plan(streamed: window, logged: reaching.kept)
        let inGap = { (plan: BackfillPlanner.Plan) in plan.backfilled.filter { $0.time > earliest } }
        #expect(inGap(skipped).count == gap.count)
        #expect(inGap(skipped) == inGap(all), "the gap is filled the same without them")
        #expect(Set(inGap(skipped).compactMap(board.index(of:))) == Set(gap))
        #expect(inGap(skipped).allSatisfy { board.index(of: $0).map { board.values[$0] } == $0.raw })
        // A boot without a clock reading, or one whose ticks wrapped, keeps every sample.
        #expect(BackfillPlanner(nominalPeriod: 10_000_000).samples(board.logged, reaching: earliest).before == 0)
        let wrapping = [LoggedSample(resetUID: 5, tick: 10, raw: board.values[0]), LoggedSample(resetUID: 5, tick: .max - 1, raw: board.values[1]),
                        LoggedSample(resetUID: 5, tick: 3, raw: board.values[2])]
        let afterWrap = BackfillPlanner(nominalPeriod: 10_000_000, bootOrigins: [5: 0]).samples(wrapping, reaching: 100_000_000_000)
        #expect(afterWrap.kept.map(\.tick) == [.max - 1, 3], "tick 10 is long before; the sample after the wrap is kept")
    }

    @Test("a page is matched only against the stream near its ticks: its gap's fill is the same as against the whole stream")
    func aPageIsMatchedOnlyAgainstTheStreamNearIt() {
        let seed: UInt64 = 52
        print("BackfillPlannerTests.aPageIsMatchedOnlyAgainstTheStreamNearIt seed \(seed)")
        // Five minutes streamed; a page of the log from 60 s to 65 s holds a 2 s gap.
        let gap = 6_200..<6_400
        let board = LoggingBoard(seed: seed, seconds: 300, imuPPM: -90, tickPPM: 30, dropped: { gap.contains($0) })
        let planner = BackfillPlanner(nominalPeriod: 10_000_000, bootOrigins: [5: board.boots[5]! - 20_000_000])
        let page = Array(board.logged[6_000..<6_500])
        let near = planner.streamed(board.streamed, near: page)
        // From 11 s (the clock read's tolerance and 10 s of drift) before the page to 11 s after
        // it, as the clock read and the crystals place it: about 2,700 of the 29,800 streamed.
        #expect(near.count < board.streamed.count / 5, "\(near.count) of \(board.streamed.count)")
        #expect(near.first.map { $0.time <= board.truth[6_000] - 10_900_000_000 } == true)
        #expect(near.last.map { $0.time >= board.truth[6_499] + 10_900_000_000 } == true)
        let all = planner.plan(streamed: board.streamed, logged: page)
        let nearOnly = planner.plan(streamed: near, logged: page)
        #expect(nearOnly.backfilled == all.backfilled, "the same samples at the same times")
        #expect(Set(nearOnly.backfilled.compactMap(board.index(of:))) == Set(gap))
        #expect(nearOnly.alreadyStreamed == all.alreadyStreamed && nearOnly.collisions == all.collisions)
        // No page, nothing to match; a boot without a clock reading could lie anywhere.
        #expect(planner.streamed(board.streamed, near: []).isEmpty)
        #expect(BackfillPlanner(nominalPeriod: 10_000_000).streamed(board.streamed, near: page).count == board.streamed.count)
    }

    @Test("a page of a long gap's readout places only its part of the log: the same samples at the same times as placing all of it")
    func aPlanPlacingFromAPageHandsOutWhatTheWholePlanPlacesThere() {
        let seed: UInt64 = 53
        print("BackfillPlannerTests.aPlanPlacingFromAPageHandsOutWhatTheWholePlanPlacesThere seed \(seed)")
        // Five minutes logged, the stream lost for three of them (a gateway down), and short
        // losses before and after.
        let gap = 6_000..<24_000
        let board = LoggingBoard(seed: seed, seconds: 300, imuPPM: -90, tickPPM: 30,
                                 dropped: { gap.contains($0) || $0 % 997 == 0 })
        let planner = BackfillPlanner(nominalPeriod: 10_000_000, bootOrigins: [5: board.boots[5]! - 20_000_000])
        for end in [12_000, 24_100, 30_000] {
            // The log read so far, up to a page in the gap, just past it, and all of it.
            let logged = Array(board.logged[..<end])
            let near = planner.streamed(board.streamed, near: logged)
            let all = planner.plan(streamed: near, logged: logged)
            for from in [0, end - 512, end - 256, gap.lowerBound + 100] where from >= 0 {
                let part = planner.plan(streamed: near, logged: logged, placingFrom: from)
                let expected = all.backfilled.filter { (board.index(of: $0) ?? -1) >= from }
                #expect(part.backfilled == expected, "log to \(end), placing from \(from): \(part.backfilled.count) against \(expected.count)")
                #expect(part.alreadyStreamed == all.alreadyStreamed)
            }
        }
        let whole = planner.plan(streamed: board.streamed, logged: board.logged)
        #expect(Set(whole.backfilled.compactMap(board.index(of:))) == Set(board.truth.indices).subtracting(board.streamedIndices))
    }
    @Test("the anchor walk goes over the samples the stream has nothing near in one step, up to a relock's window before the stream")
    func theWalkSkipsOnlyWhereNoStreamedSampleIsNear() {
        // A minute of stream, a 10-minute hole, a minute of stream; a log at 100 Hz across it
        // all, on the stream's clock.
        let period: Int64 = 10_000_000
        let streamed = (0..<6_000).map { BackfillPlanner.StreamedSample(time: Int64($0) * period, raw: RawVector(x: 1, y: 2, z: 3)) }
            + (66_000..<72_000).map { BackfillPlanner.StreamedSample(time: Int64($0) * period, raw: RawVector(x: 1, y: 2, z: 3)) }
        let ticks = (0..<72_000).map { Double($0) * Double(period) }
        var hole = StreamHole(streamed: streamed, margin: 11e9)
        let allowed = { (_: Int) in 5_000_000.0 }
        // Near the stream (within the 11 s reach and a second): looked at sample by sample.
        #expect(hole.skippable(from: 1_000, ticks: ticks, offset: 0, allowed: allowed) == nil)
        #expect(hole.skippable(from: 7_100, ticks: ticks, offset: 0, allowed: allowed) == nil)
        // 12 s past the stream: in the hole, but a relock's misses must be inside it first.
        #expect(hole.skippable(from: 7_200, ticks: ticks, offset: 0, allowed: allowed) == nil)
        #expect(hole.skippable(from: 7_215, ticks: ticks, offset: 0, allowed: allowed) == nil)
        // Then on to a relock's window and its misses before 12 s ahead of the stream again.
        let end = hole.skippable(from: 7_216, ticks: ticks, offset: 0, allowed: allowed)
        #expect(end == 66_000 - 1_200 - OffsetLock.window - BackfillAnchors.relockAfter, "\(end.map(String.init) ?? "nil")")
        // Another offset is another prediction: its hole starts again.
        #expect(hole.skippable(from: 7_217, ticks: ticks, offset: 1e6, allowed: allowed) == nil)
        // A hole that runs to the log's end is skipped to it.
        var tail = StreamHole(streamed: Array(streamed.prefix(6_000)), margin: 11e9)
        #expect(tail.skippable(from: 7_200, ticks: ticks, offset: 0, allowed: allowed) == nil)
        #expect(tail.skippable(from: 7_216, ticks: ticks, offset: 0, allowed: allowed) == 72_000)
    }
}
