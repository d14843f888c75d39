import Foundation

/// A real receiver capture replayed several times back to back, as if the receiver had kept
/// going: each repeat's UTC times of day are shifted by the capture's length and the
/// checksums recomputed, so fixes stay continuous and in order.
///
/// The captures in shared/testdata last about half a minute. A whole daemon takes longer than
/// that to start on a loaded 2-core machine, and a session that starts after the replay ended
/// has no fix: tests that need fixes during a session replay a looped copy.
public enum LoopedNMEACapture {
    /// Writes `repeats` copies of the capture at `source` to `destination`. Comment lines are
    /// kept once, at the top.
    public static func write(from source: String, to destination: String, repeats: Int) throws {
        let lines = try String(contentsOfFile: source, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let times = lines.compactMap { line -> Double? in
            guard let (index, fields) = timeField(String(line)) else { return nil }
            return seconds(fields[index])
        }
        guard let first = times.min(), let last = times.max(),
              let step = Set(times).sorted().dropFirst().first.map({ $0 - first }), step > 0 else {
            throw TestBusError(message: "\(source): no NMEA times of day to loop on")
        }
        // The next repeat starts one fix interval after the capture's last fix.
        let period = last - first + step
        var out = ""
        for repeatIndex in 0..<max(1, repeats) {
            for line in lines {
                let text = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
                if text.isEmpty { continue }
                if !text.hasPrefix("$") {
                    if repeatIndex == 0 { out += text + "\n" }
                    continue
                }
                out += shifted(text, by: Double(repeatIndex) * period) + "\n"
            }
        }
        try out.write(toFile: destination, atomically: true, encoding: .utf8)
    }

    /// The field holding the UTC time of day in the sentences that carry one.
    private static let timeFieldIndex = ["GGA": 1, "RMC": 1, "ZDA": 1, "GNS": 1, "GST": 1, "GBS": 1, "GLL": 5]

    private static func timeField(_ sentence: String) -> (Int, [String])? {
        guard sentence.hasPrefix("$"), let star = sentence.lastIndex(of: "*") else { return nil }
        let fields = sentence[sentence.index(after: sentence.startIndex)..<star].split(separator: ",", omittingEmptySubsequences: false)
            .map(String.init)
        guard let type = fields.first, type.count >= 5, let index = timeFieldIndex[String(type.suffix(3))], index < fields.count,
              seconds(fields[index]) != nil else { return nil }
        return (index, fields)
    }

    /// `hhmmss[.sss]` as seconds of the day.
    private static func seconds(_ field: String) -> Double? {
        guard field.count >= 6, let h = Double(field.prefix(2)), let m = Double(field.dropFirst(2).prefix(2)),
              let s = Double(field.dropFirst(4)) else { return nil }
        return h * 3600 + m * 60 + s
    }

    private static func shifted(_ sentence: String, by offset: Double) -> String {
        guard offset > 0, let (index, original) = timeField(sentence), let time = seconds(original[index]) else { return sentence }
        var fields = original
        let decimals = fields[index].split(separator: ".").dropFirst().first?.count ?? 0
        let total = (time + offset).truncatingRemainder(dividingBy: 86_400)
        let scale = Int(pow(10, Double(decimals)).rounded())
        let units = Int((total * Double(scale)).rounded())
        let whole = units / scale
        let fraction = decimals > 0 ? "." + String(format: "%0\(decimals)d", units % scale) : ""
        fields[index] = String(format: "%02d%02d%02d", whole / 3600, whole / 60 % 60, whole % 60) + fraction
        let body = fields.joined(separator: ",")
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return "$" + body + "*" + String(format: "%02X", checksum)
    }
}
