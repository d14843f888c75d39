import BlueZ
@testable import BlueZSimulator
import Boards
import Foundation
import MetaWear
import MetaWearBoardModel
import TestSupport
import Testing

/// How long the long streaming test runs (the issue asks for 60 s; shorten locally with
/// MWGATE_E2E_STREAM_SECONDS).
private let streamSeconds: Double = ProcessInfo.processInfo.environment["MWGATE_E2E_STREAM_SECONDS"].flatMap(Double.init) ?? 60

@Suite("Boards end to end: streaming against mwsim", .enabled(if: TestBus.isAvailable))
struct StreamingTests {
    /// A BMI160 (MetaMotion R) and a BMI270 (MetaMotion S) at 100 Hz gyro for 60 s at the same
    /// time: every sample the simulator emitted arrives once, in order, and decodes to the
    /// model's signal. Board R uses AcquireNotify, board S StartNotify.
    @Test(.timeLimit(.minutes(3)))
    func twoChipsStreamEverySampleExactlyOnce() async throws {
        try await EndToEndRig.with(boards: 2, model: .mixed) { rig in
            let manager = BoardManager(client: rig.client, defaultOptions: try testOptions())
            async let managerRun: Void = manager.run()
            let recorder = EventRecorder()
            let forwarder = recordEvents(manager.events, into: recorder)
            let boards = [try await rig.address(0), try await rig.address(1)]
            await manager.add(boards[0], options: try testOptions(delivery: .automatic))
            await manager.add(boards[1], options: try testOptions(delivery: .propertiesChanged))
            try await waitUntil("both boards streaming") {
                boards.allSatisfy { recorder.isStreaming($0) && !recorder.samples($0).isEmpty }
            }
            let chips = await [manager.session(for: boards[0])?.boardDescription?.chip,
                               manager.session(for: boards[1])?.boardDescription?.chip]
            #expect(chips == [.bmi160, .bmi270])

            try await Task.sleep(for: .milliseconds(Int64(streamSeconds * 1000)))

            // What the boards emitted up to now must all arrive: wait for the last index seen
            // in the stats, then compare counts over the same span.
            var emitted: [Int] = []
            var lastIndex: [UInt64] = []
            for i in 0..<2 {
                let stats = try await rig.simulator.stats(i)
                emitted.append(stats.samplesEmitted[.gyro] ?? 0)
                lastIndex.append(stats.lastSampleIndex[.gyro] ?? 0)
                #expect(stats.droppedByFault == 0 && stats.droppedByRateCap == 0, "board \(i): \(stats)")
                #expect(stats.connections == 1 && stats.disconnections == 0, "board \(i) kept one link: \(stats)")
            }
            for i in 0..<2 {
                try await waitUntil("board \(i) delivered sample \(lastIndex[i])", within: .seconds(10)) {
                    recorder.samples(boards[i]).contains { sampleIndex($0) >= lastIndex[i] }
                }
            }
            await manager.shutdown()
            await managerRun
            await forwarder.value

            for i in 0..<2 {
                let name = i == 0 ? "MetaMotion R" : "MetaMotion S"
                let samples = recorder.samples(boards[i]).filter { sampleIndex($0) <= lastIndex[i] }
                // ~100 Hz for the whole run (a generous floor: the count check below is exact).
                #expect(Double(emitted[i]) >= streamSeconds * 100 * 0.9, "\(name) emitted only \(emitted[i])")
                #expect(samples.count == emitted[i], "\(name): received \(samples.count) of \(emitted[i]) emitted samples")
                #expect(samples.first.map(sampleIndex) == 0, "\(name): first sample is index 0")
                #expect(Set(samples.map(sampleIndex)).count == samples.count, "\(name): duplicates")
                #expect(samples.last.map(sampleIndex) == lastIndex[i])
                expectStrictlyIncreasing(samples, board: name)
                #expect(expectExactValues(samples, seed: UInt32(i + 1), board: name) == 0)
                #expect(try await rig.sensorsIdle(i), "\(name) sensors off after shutdown")
            }
        }
    }
}
