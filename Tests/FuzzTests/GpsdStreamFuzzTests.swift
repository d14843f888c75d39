import Basics
import Foundation
import Testing
@testable import GNSS
#if canImport(Glibc)
import Glibc
#endif

/// What our gpsd source reads from the socket: gpsd's JSON replies with the receiver's NMEA
/// relayed in between. A fake gpsd on loopback answers `?WATCH` and then streams bad input,
/// each piece followed by a good RMC+GGA pair with its own time: every good pair must still
/// come out as a fix, in order, from the real `GpsdFixSource`.
@Suite("Fuzz: gpsd stream", .timeLimit(.minutes(20)))
struct GpsdStreamFuzzTests {
    static func seal(_ body: String) -> String {
        var checksum: UInt8 = 0
        for byte in body.utf8 { checksum ^= byte }
        return "$" + body + "*" + String(format: "%02X", checksum)
    }

    /// The good pair after input `index`: 10:00:00 plus `index` seconds (wrapping within the day).
    static func marker(_ index: Int) -> (text: String, timeOfDay: Int64) {
        let seconds = 36_000 + index % 50_000
        let time = String(format: "%02d%02d%02d.00", seconds / 3600, seconds / 60 % 60, seconds % 60)
        let rmc = seal("GPRMC,\(time),A,4807.038,N,01131.000,E,0.5,54.7,210526,,,A")
        let gga = seal("GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
        return ("\r\n" + rmc + "\r\n" + gga + "\r\n", Int64(seconds) * 1_000_000)
    }

    static let jsonFragments = [
        #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"lat":"#, #"{"class":"SKY","satellites":[{"PRN":"#,
        #"{"class":"ERROR","message":"unrecognized request"}"#, #"{"class":"DEVICE","path":"/dev/gps0","activated":"#,
        "\\u0000", "\u{1B}[2J", "$GP", "*", "$$$$", "\u{0}\u{0}\u{0}", "\u{FF}\u{FE}", "}}}}", "[[[[",
    ]

    /// One piece of bad input, as gpsd could garble it.
    static func badInput(_ c: inout FuzzCase) -> [UInt8] {
        switch c.int(0...4) {
        case 0:
            c.kind = "random bytes"
            return c.bytes(c.int(0...300))
        case 1:
            c.kind = "broken gpsd JSON"
            return Array((0..<c.int(1...6)).map { _ in c.pick(jsonFragments) }.joined(separator: c.pick(["", "\n", "\r\n"])).utf8)
        case 2:
            c.kind = "NMEA with bad checksums"
            let body = c.pick(["GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W", "GPGGA,,,,,,0,00,99.99,,,,,,"])
            return Array(("$" + body + "*" + String(format: "%02X", c.int(0...255))).utf8)
        case 3:
            c.kind = "sentence longer than a line"
            return Array(("$GPGGA," + String(repeating: "9,", count: c.int(60...2_000))).utf8)
        default:
            c.kind = "re-sealed nonsense sentences"
            let fields = (0..<c.int(1...20)).map { _ in c.text(c.int(0...12), from: Array("0123456789.-NSEWAV")) }
            return Array(seal(c.pick(["GPRMC", "GNGGA", "GPGSV", "GPGSA", "GNVTG", "GPZDA", "GPGST"]) + "," + fields.joined(separator: ",")).utf8)
        }
    }

    @Test("bad input between good sentences never loses a good fix or stops the source")
    func badInputBetweenGoodFixes() async throws {
        var cases = Fuzz.seeds("gpsd stream", count: Fuzz.count(1_500)).map { FuzzCase(parser: "gpsd stream", seed: $0) }
        var payload: [UInt8] = []
        var expected: [Int64] = []
        for index in cases.indices {
            payload += Self.badInput(&cases[index])
            let marker = Self.marker(index)
            payload += Array(marker.text.utf8)
            expected.append(marker.timeOfDay)
        }
        let server = try FakeGpsd(payload: payload, chunkSeed: Fuzz.baseSeed)
        defer { server.stop() }

        var configuration = FixSourceConfiguration()
        configuration.reconnects = false
        let source = GpsdFixSource(host: "127.0.0.1", port: Int(server.port), configuration: configuration)
        // Bounded: the source ends when the fake gpsd closes after the payload; the trait's
        // time limit catches a source that never ends.
        var seen: [Int64: GNSSFix] = [:]
        for try await fix in source.fixes() {
            seen[fix.timeOfDay.microseconds] = fix
            if seen.count >= expected.count, expected.allSatisfy({ seen[$0] != nil }) { break }
        }
        #expect(server.receivedWatch, "the source never sent ?WATCH")
        for (index, time) in expected.enumerated() {
            let fix = seen[time]
            cases[index].expect(fix != nil, "the good fix after this input never came out")
            if let fix {
                cases[index].expect(fix.latitude.map { abs($0 - 48.1173) < 1e-6 } ?? false, "the good fix has latitude \(String(describing: fix.latitude))")
            }
        }
        var tally = FuzzTally(parser: "gpsd stream")
        for fuzzCase in cases { tally.add(fuzzCase) }
        tally.report()
        #expect(tally.failures == 0)
    }
}

/// A gpsd stand-in on 127.0.0.1: waits for `?WATCH`, answers like gpsd 3.22, streams the
/// payload in random-sized writes and closes.
final class FakeGpsd: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var watched = false
    private var stopped = false

    var receivedWatch: Bool { lock.withLock { watched } }

    init(payload: [UInt8], chunkSeed: UInt64) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        guard listener >= 0 else { throw FixSourceError.posix("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound, listen(listener, 4) == 0 else {
            close(listener)
            throw FixSourceError.posix("bind/listen")
        }
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var line: [UInt8] = []
            var byte: UInt8 = 0
            while read(client, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
            let request = String(decoding: line, as: UTF8.self)
            lock.withLock { watched = request.hasPrefix("?WATCH=") && request.contains("\"nmea\":true") }
            let greeting = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"# + "\r\n"
                + #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyUSB0","driver":"NMEA0183","activated":"2026-05-21T10:00:00.000Z","native":0,"bps":9600}]}"# + "\r\n"
                + #"{"class":"WATCH","enable":true,"json":false,"nmea":true,"raw":0,"scaled":false,"timing":false,"split24":false,"pps":false}"# + "\r\n"
            let bytes = Array(greeting.utf8) + payload
            var rng = SeededRandom(seed: chunkSeed)
            var offset = 0
            while offset < bytes.count && !isStopped {
                let end = min(bytes.count, offset + Int.random(in: 1...4096, using: &rng))
                while offset < end {
                    let written = bytes.withUnsafeBytes { write(client, $0.baseAddress! + offset, end - offset) }
                    if written <= 0 { return }
                    offset += written
                }
            }
            // Give the reader time to drain before the close ends its stream.
            usleep(300_000)
        }.start()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    func stop() {
        lock.withLock { stopped = true }
        close(listener)
    }
}
