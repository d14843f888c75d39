import Basics
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Replays a capture (gpsd test-log format: NMEA lines, `#` comments skipped by the
/// framer) either as fast as possible or paced in real time: the replay sleeps between
/// cycles for as long as their NMEA time stamps are apart (capped at 2 s, so a gap in the
/// capture does not stall it). Arrival times are the system clock at replay.
public struct FileReplayFixSource: FixSource {
    public let path: String
    public let pacing: GNSSSourceSpec.ReplayPacing
    public let configuration: FixSourceConfiguration

    public init(path: String, pacing: GNSSSourceSpec.ReplayPacing,
                configuration: FixSourceConfiguration = .init()) {
        self.path = path
        self.pacing = pacing
        self.configuration = configuration
    }

    public var description: String { GNSSSourceSpec.file(path: path, pacing: pacing).description }

    /// The replay runs in the consuming task, one step per fix asked for: nothing reads ahead
    /// of the consumer, and cancelling the consumer (or dropping the stream) ends it.
    public func fixes() -> AsyncThrowingStream<GNSSFix, any Error> {
        let replay = Replay(path: path, pacing: pacing, options: configuration.assembler)
        return AsyncThrowingStream {
            while true {
                switch try replay.step() {
                case .fix(let fix): return fix
                case .end: return nil
                case .pause(let pause):
                    do { try await ContinuousClock().sleep(until: replay.wakeTime(after: pause)) } catch { return nil }
                }
            }
        }
    }

    /// One replay's cursor, made when the first fix is asked for (reading the file then).
    private final class Replay: Sendable {
        private let path: String
        private let pacing: GNSSSourceSpec.ReplayPacing
        private let options: FixAssembler.Options
        private let cursor = Mutex<FileReplayCursor?>(nil)
        /// When the last pause ended (the replay's start before the first): pauses count from
        /// there, so the time the consumer takes between two fixes does not add to them.
        private let paceMark = Mutex<ContinuousClock.Instant?>(nil)

        init(path: String, pacing: GNSSSourceSpec.ReplayPacing, options: FixAssembler.Options) {
            self.path = path
            self.pacing = pacing
            self.options = options
        }

        /// The end of a pause of `pause` that follows the previous one.
        func wakeTime(after pause: Duration) -> ContinuousClock.Instant {
            paceMark.withLock { mark in
                let wake = (mark ?? .now) + pause
                mark = wake
                return wake
            }
        }

        func step() throws -> FileReplayCursor.Step {
            try cursor.withLock { cursor throws -> FileReplayCursor.Step in
                if cursor == nil { paceMark.withLock { $0 = .now } }
                // Taken out, not copied: a copy would duplicate its buffers at the first change.
                var current = try cursor.take()
                    ?? FileReplayCursor(bytes: try FileReplayFixSource.read(path), pacing: pacing, options: options)
                defer { cursor = current }
                return current.step(now: { Date() })
            }
        }
    }

    static func read(_ path: String) throws -> [UInt8] {
        do {
            return try FileBytes.contents(ofPath: path)
        } catch {
            throw FixSourceError("cannot read \(path): \(error)")
        }
    }
}
