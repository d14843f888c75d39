import Foundation
import GNSS

/// `mwbench gnss --input FILE [--runs N]`: NMEA throughput on a capture held in memory.
///
/// - parser: framing + checksum + typed parse of every sentence, with the position,
///   time and altitude fields converted to numbers (what minmea's harness measures).
/// - assembler: the full pipeline, bytes -> sentences -> fixes.
/// Prints `key=value` lines (median of the runs, in input lines per second) for
/// scripts/bench/gnss.sh.
enum GNSSBenchmark {
    static func run(_ arguments: [String]) {
        var input: String?
        var runs = 5
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--input" where index + 1 < arguments.count:
                input = arguments[index + 1]
                index += 2
            case "--runs" where index + 1 < arguments.count:
                runs = max(1, Int(arguments[index + 1]) ?? 5)
                index += 2
            default:
                fail("usage: mwbench gnss --input FILE [--runs N] (unexpected '\(arguments[index])')")
            }
        }
        guard let input else { fail("usage: mwbench gnss --input FILE [--runs N]") }
        guard let data = FileManager.default.contents(atPath: input) else { fail("mwbench: cannot read \(input)") }
        let bytes = Array(data)
        // Rates are input lines per second, as for the Python peer, so damaged lines the
        // framer rejects count the same on both sides.
        let inputLines = bytes.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }

        var parserRates: [Double] = []
        var sentences = 0
        var checksumSink = 0.0
        for _ in 0..<runs {
            var framer = NMEAFramer()
            var parsed = 0
            let start = ContinuousClock.now
            bytes.withUnsafeBytes { raw in
                framer.feed(raw) { sentence in
                    parsed += 1
                    switch NMEAParser.parse(sentence) {
                    case .rmc(let rmc): checksumSink += (rmc.latitude ?? 0) + (rmc.speedKnots ?? 0)
                    case .gga(let gga): checksumSink += (gga.altitudeMSL ?? 0) + (gga.longitude ?? 0)
                    case .gll(let gll): checksumSink += gll.latitude ?? 0
                    case .gsv(let gsv): checksumSink += Double(gsv.satellitesInView ?? 0)
                    case .gsa(let gsa): checksumSink += gsa.pdop ?? 0
                    default: break
                    }
                }
            }
            let seconds = (ContinuousClock.now - start).seconds
            sentences = parsed
            parserRates.append(Double(inputLines) / seconds)
        }

        var assemblerRates: [Double] = []
        var fixes = 0
        let arrival = Date()
        for _ in 0..<runs {
            var decoder = NMEADecoder()
            var count = 0
            let start = ContinuousClock.now
            bytes.withUnsafeBytes { raw in
                decoder.feed(raw, arrival: arrival) { _ in count += 1 }
            }
            decoder.finish(arrival: arrival) { _ in count += 1 }
            let seconds = (ContinuousClock.now - start).seconds
            fixes = count
            assemblerRates.append(Double(inputLines) / seconds)
        }
        print("input_lines=\(inputLines)")
        print("sentences=\(sentences)")
        print("fixes=\(fixes)")
        print("parser_sentences_per_second=\(Int(median(parserRates)))")
        print("assembler_sentences_per_second=\(Int(median(assemblerRates)))")
        print("runs=\(runs)")
        print("sink=\(checksumSink.isFinite ? 1 : 0)")
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
