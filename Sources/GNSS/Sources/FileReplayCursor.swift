#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a file replay is: the capture's bytes, the next line, the decoder and the fixes it
/// decoded that were not handed out yet. Pure: each ``step(now:)`` says what comes next, a
/// fix, a pause before the next line (real-time pacing) or the end; the replay's consumer
/// asks for one step at a time, so no more than one line's fixes ever wait.
struct FileReplayCursor: Sendable {
    enum Step: Sendable {
        case fix(GNSSFix)
        /// Sleep this long, then step again (the next line is a later cycle's).
        case pause(Duration)
        case end
    }

    /// The longest pause between two cycles, so a gap in the capture does not stall the replay.
    static let longestPause: Int64 = 2_000_000

    private let bytes: [UInt8]
    private let pacing: GNSSSourceSpec.ReplayPacing
    private var decoder: NMEADecoder
    /// Where the next line starts; past the end once the last line was fed.
    private var offset = 0
    private var decoded: [GNSSFix] = []
    private var handedOut = 0
    private var previousTime: NMEATimeOfDay?
    /// The pause before the line at `offset` was already taken.
    private var pausedBeforeLine = false
    private var finished = false

    init(bytes: [UInt8], pacing: GNSSSourceSpec.ReplayPacing, options: FixAssembler.Options) {
        self.bytes = bytes
        self.pacing = pacing
        decoder = NMEADecoder(options: options)
    }

    /// What comes next; `now` is the arrival time of what is fed now.
    mutating func step(now: () -> Date) -> Step {
        while true {
            if handedOut < decoded.count {
                handedOut += 1
                return .fix(decoded[handedOut - 1])
            }
            decoded.removeAll(keepingCapacity: true)
            handedOut = 0
            if finished { return .end }
            if offset > bytes.count {
                decoder.finish(arrival: now()) { decoded.append($0) }
                finished = true
                continue
            }
            let end = bytes[offset...].firstIndex(of: 0x0A) ?? bytes.count
            let line = bytes[offset..<end]
            if pacing == .realtime, !pausedBeforeLine, let time = Self.timeOfDay(line) {
                defer { previousTime = time }
                if let previousTime, !previousTime.sameCycle(as: time) {
                    let pause = min(max(time.microseconds - previousTime.microseconds, 0), Self.longestPause)
                    pausedBeforeLine = true
                    return .pause(.microseconds(pause))
                }
            }
            pausedBeforeLine = false
            decoder.feed(Array(line) + [0x0A], arrival: now()) { decoded.append($0) }
            offset = end + 1
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
