import ArgumentParser
import Basics
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import GNSS

/// `mwctl gnss ...`: decode captures and watch live receivers.
struct GNSSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gnss",
        abstract: "Decode NMEA 0183 and watch GNSS receivers.",
        discussion: """
            Source specs (--source):
              serial:PATH[@BAUD]     receiver on a tty, e.g. serial:/dev/ttyACM0 or \
            serial:/dev/serial0@115200; without @BAUD the rate is detected among 4800, 9600, \
            38400 and 115200. Reopened with backoff when a USB receiver is unplugged.
              gpsd://HOST[:PORT]     gpsd relaying the receiver's NMEA (?WATCH nmea); port 2947 \
            by default; IPv6 as gpsd://[::1]:2947. Reconnects.
              tcp://HOST:PORT        plain NMEA byte stream (ser2net, nc). Reconnects.
              file:PATH[?speed=realtime|fast]   replay a capture; realtime (default) paces \
            cycles by their NMEA time stamps.
            Exit status: 0 success; 2 bad usage or malformed/unknown source spec; 8 unreadable \
            input or failed source.
            """,
        subcommands: [Decode.self, Watch.self]
    )

    struct Output: ParsableArguments {
        @Flag(help: "One gpsd TPV JSON object per fix (gpsd field names and units).")
        var json = false
    }

    /// `mwctl gnss decode FILE`.
    struct Decode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decode an NMEA capture file and print one line per fix.",
            discussion: """
                Reads a capture (gpsd test-log format; '#' lines are skipped) and prints one \
                line per reporting cycle. Dates are printed as sent unless \
                --week-rollover is given.
                Exit status: 0 success; 2 bad usage; 8 file cannot be read.
                """
        )

        @Argument(help: "Capture file with NMEA 0183 sentences.")
        var file: String

        @OptionGroup var output: Output

        @Flag(help: "Move dates before 2024-01-01 forward by 1024 weeks (GPS week rollover).")
        var weekRollover = false

        @Flag(help: "Print sentence and fix counters to stderr at the end.")
        var summary = false

        func run() async throws {
            let bytes: [UInt8]
            do {
                bytes = try FileBytes.contents(ofPath: file)
            } catch {
                throw MWCtlExit.fail("cannot read \(file): \(error)", MWCtlExit.input)
            }
            let options = weekRollover ? FixAssembler.Options.live : FixAssembler.Options()
            let (fixes, decoder) = NMEADecoder.decode(bytes, options: options)
            var text = ""
            for fix in fixes {
                text += (output.json ? TPVEncoder.encode(fix) : FixFormatter.line(fix)) + "\n"
            }
            StandardStream.output.write(text)
            if summary {
                let c = decoder.framer.counters
                let s = decoder.assembler.statistics
                StandardStream.error.write("""
                    sentences \(c.sentences), bad checksums \(c.badChecksums), malformed \(c.malformed), \
                    overlong \(c.overlong), garbage bytes \(c.garbageBytes), proprietary \
                    \(decoder.proprietarySentences), without time \(s.sentencesWithoutTime), fixes \(s.fixes)

                    """)
            }
        }
    }

    /// `mwctl gnss watch --source SPEC`.
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print fixes from a live source as they arrive.",
            discussion: """
                Status messages (connected, reconnecting, detected baud rate) go to stderr.
                Exit status: 0 success; 2 malformed or unknown source spec; 8 the source \
                failed (unreadable file, or connection lost with --no-reconnect).
                """
        )

        @Option(help: "Where fixes come from (see `mwctl gnss --help`).")
        var source: String

        @OptionGroup var output: Output

        @Option(help: "Exit after this many fixes.")
        var count: Int?

        @Flag(help: "Exit when the connection or device goes away instead of reconnecting.")
        var noReconnect = false

        func run() async throws {
            let spec: GNSSSourceSpec
            do {
                spec = try GNSSSourceSpec(parsing: source)
            } catch {
                throw MWCtlExit.fail(error.description, MWCtlExit.usage)
            }
            if let count, count < 1 {
                throw MWCtlExit.fail("--count must be at least 1", MWCtlExit.usage)
            }
            var options = FixAssembler.Options.live
            if case .file = spec { options = FixAssembler.Options() }
            let configuration = FixSourceConfiguration(
                assembler: options, reconnects: !noReconnect,
                events: { event in
                    StandardStream.error.write("mwctl: \(event)\n")
                })
            let source = spec.makeSource(configuration: configuration)
            var seen = 0
            do {
                for try await fix in source.fixes() {
                    emitLine(output.json ? TPVEncoder.encode(fix) : FixFormatter.line(fix))
                    seen += 1
                    if let count, seen >= count { return }
                }
            } catch {
                throw MWCtlExit.fail("\(error)", MWCtlExit.input)
            }
        }
    }
}

/// The human-readable one-line form of a fix.
enum FixFormatter {
    static func line(_ fix: GNSSFix) -> String {
        var parts: [String] = []
        parts.append(fix.time.map(TPVEncoder.iso8601) ?? "no-date-T" + timeOfDay(fix.timeOfDay))
        parts.append(["", "no-fix", "2D", "3D"][fix.mode.rawValue])
        if let lat = fix.latitude, let lon = fix.longitude {
            parts.append(format(lat, 7) + " " + format(lon, 7))
        }
        if let alt = fix.altitudeMSL { parts.append("alt \(format(alt, 1)) m") }
        if let speed = fix.speed { parts.append("speed \(format(speed, 2)) m/s") }
        if let track = fix.track { parts.append("track \(format(track, 1))") }
        if let hdop = fix.hdop { parts.append("hdop \(format(hdop, 2))") }
        if let eph = fix.horizontalError { parts.append("eph \(format(eph, 1)) m") }
        if let sats = fix.satellitesUsed { parts.append("sats \(sats)") }
        return parts.joined(separator: " ")
    }

    private static func format(_ value: Double, _ decimals: Int) -> String {
        FixedDecimal.string(value, places: decimals)
    }

    private static func timeOfDay(_ time: NMEATimeOfDay) -> String {
        let millis = time.microseconds / 1000
        let seconds = millis / 1000
        func digits(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return digits(seconds / 3600, 2) + ":" + digits(seconds / 60 % 60, 2) + ":" + digits(seconds % 60, 2) + "." + digits(millis % 1000, 3) + "Z"
    }
}
