import Testing
@testable import GNSS

@Suite("Source specs")
struct SourceSpecTests {
    @Test(arguments: [
        ("serial:/dev/gps0", GNSSSourceSpec.serial(path: "/dev/gps0", baud: nil)),
        ("serial:/dev/ttyAMA0@115200", .serial(path: "/dev/ttyAMA0", baud: 115200)),
        ("gpsd://localhost", .gpsd(host: "localhost", port: 2947)),
        ("gpsd://127.0.0.1:29470", .gpsd(host: "127.0.0.1", port: 29470)),
        ("gpsd://[::1]:2948", .gpsd(host: "::1", port: 2948)),
        ("tcp://gps.local:10110", .tcp(host: "gps.local", port: 10110)),
        ("file:/tmp/x.nmea", .file(path: "/tmp/x.nmea", pacing: .realtime)),
        ("file:logs/x.nmea?speed=fast", .file(path: "logs/x.nmea", pacing: .fast)),
        ("  tcp://h:1 ", .tcp(host: "h", port: 1)),
    ])
    func parses(_ text: String, _ expected: GNSSSourceSpec) throws {
        #expect(try GNSSSourceSpec(parsing: text) == expected)
        // The canonical form parses back to the same spec.
        #expect(try GNSSSourceSpec(parsing: expected.description) == expected)
    }

    @Test(arguments: [
        ("", "empty"),
        ("bogus:/x", "unknown source"),
        ("/dev/ttyACM0", "unknown source"),
        ("serial:/dev/gps0@1234", "bad baud rate '1234'"),
        ("serial:/dev/gps0@fast", "bad baud rate 'fast'"),
        ("serial:dev/gps0", "absolute device path"),
        ("tcp://host", "missing port"),
        ("tcp://host:0", "bad port '0'"),
        ("gpsd://host:70000", "bad port '70000'"),
        ("gpsd://:2947", "missing or bad host"),
        ("gpsd://[::1:2947", "unclosed"),
        ("file:", "needs a path"),
        ("file:/x?speed=slow", "bad option 'speed=slow'"),
    ])
    func rejects(_ text: String, _ fragment: String) {
        do {
            let spec = try GNSSSourceSpec(parsing: text)
            Issue.record("accepted '\(text)' as \(spec)")
        } catch {
            #expect(error.message.contains(fragment), "\(error.message)")
        }
    }
}
