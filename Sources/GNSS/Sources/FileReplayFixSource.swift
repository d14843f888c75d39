import Basics
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

    public func fixes() -> AsyncThrowingStream<GNSSFix, any Error> {
        let path = path
        let pacing = pacing
        let options = configuration.assembler
        return AsyncThrowingStream { continuation in
            let task = Task {
                let bytes: [UInt8]
                do {
                    bytes = try Self.read(path)
                } catch {
                    continuation.finish(throwing: error)
                    return
                }
                var decoder = NMEADecoder(options: options)
                let emit: (GNSSFix) -> Void = { continuation.yield($0) }
                switch pacing {
                case .fast:
                    decoder.feed(bytes, arrival: Date(), emit: emit)
                case .realtime:
                    var previous: NMEATimeOfDay?
                    for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
                        if Task.isCancelled { break }
                        if let time = Self.timeOfDay(line) {
                            if let previous, !previous.sameCycle(as: time) {
                                let gap = time.microseconds - previous.microseconds
                                let pause = min(max(gap, 0), 2_000_000)
                                try? await Task.sleep(for: .microseconds(pause))
                            }
                            previous = time
                        }
                        decoder.feed(Array(line) + [0x0A], arrival: Date(), emit: emit)
                    }
                }
                decoder.finish(arrival: Date(), emit: emit)
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    static func read(_ path: String) throws -> [UInt8] {
        do {
            return try FileBytes.contents(ofPath: path)
        } catch {
            throw FixSourceError("cannot read \(path): \(error)")
        }
    }

    /// The time stamp of a line, if it is a timestamped sentence (no checksum check: this
    /// only paces the replay).
    private static func timeOfDay(_ line: ArraySlice<UInt8>) -> NMEATimeOfDay? {
        guard line.first == UInt8(ascii: "$") else { return nil }
        var trimmed = Array(line)
        while let last = trimmed.last, last == 0x0D || last == 0x0A { trimmed.removeLast() }
        return trimmed.withUnsafeBufferPointer { buffer -> NMEATimeOfDay? in
            var end = buffer.count
            if end >= 4 && buffer[end - 3] == UInt8(ascii: "*") { end -= 3 }
            guard end > 1 else { return nil }
            return NMEAParser.parse(body: UnsafeBufferPointer(rebasing: buffer[1..<end])).time
        }
    }
}
