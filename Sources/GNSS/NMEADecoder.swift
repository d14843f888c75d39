#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Framer, parser and assembler in one: bytes in, fixes out. Every source uses it, so a
/// fix means the same thing whether it came from a serial port, gpsd or a file.
public struct NMEADecoder: Sendable {
    public private(set) var framer = NMEAFramer()
    public private(set) var assembler: FixAssembler
    /// Sentences by outcome after framing.
    public private(set) var proprietarySentences = 0
    public private(set) var unsupportedSentences = 0

    public init(options: FixAssembler.Options = .init()) {
        assembler = FixAssembler(options: options)
    }

    /// Feeds received bytes; `arrival` is the system clock when they were read.
    public mutating func feed(
        _ bytes: UnsafeRawBufferPointer, arrival: Date, emit: (GNSSFix) -> Void
    ) {
        var assembler = self.assembler
        var proprietary = 0
        var unsupported = 0
        framer.feed(bytes) { raw in
            let sentence = NMEAParser.parse(raw)
            switch sentence {
            case .proprietary: proprietary += 1
            case .unsupported: unsupported += 1
            default: assembler.ingest(sentence, arrival: arrival, emit: emit)
            }
        }
        self.assembler = assembler
        proprietarySentences += proprietary
        unsupportedSentences += unsupported
    }

    /// Feeds received bytes from an array.
    public mutating func feed(_ bytes: [UInt8], arrival: Date, emit: (GNSSFix) -> Void) {
        bytes.withUnsafeBytes { feed($0, arrival: arrival, emit: emit) }
    }

    /// Ends the stream: frames a last unterminated sentence and emits the open cycle.
    public mutating func finish(arrival: Date, emit: (GNSSFix) -> Void) {
        var assembler = self.assembler
        framer.finish { raw in
            let sentence = NMEAParser.parse(raw)
            assembler.ingest(sentence, arrival: arrival, emit: emit)
        }
        assembler.flush(emit)
        self.assembler = assembler
    }

    /// Emits the open cycle without ending the stream (the source went quiet).
    public mutating func flush(emit: (GNSSFix) -> Void) {
        assembler.flush(emit)
    }

    /// Decodes a whole capture at once (for example a gpsd test log).
    public static func decode(
        _ bytes: [UInt8], options: FixAssembler.Options = .init(), arrival: Date = Date()
    ) -> (fixes: [GNSSFix], decoder: NMEADecoder) {
        var decoder = NMEADecoder(options: options)
        var fixes: [GNSSFix] = []
        decoder.feed(bytes, arrival: arrival) { fixes.append($0) }
        decoder.finish(arrival: arrival) { fixes.append($0) }
        return (fixes, decoder)
    }
}
