import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import GNSS

/// Runs the built `mwctl` binary the way a user would.
@Suite("mwctl gnss", .serialized)
struct MWCtlTests {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The mwctl built next to this test bundle.
    static var binary: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [bundle.appendingPathComponent("mwctl").path]
        candidates.append(NMEATestData.repositoryRoot.appendingPathComponent(".build/debug/mwctl").path)
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }

    /// posix_spawn with both outputs in temporary files (no Foundation Process: its
    /// waitUntilExit spins on Linux when called from a concurrency thread).
    static func run(_ arguments: [String]) throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwctl-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out").path
        let err = directory.appendingPathComponent("err").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([binary] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, binary, &actions, nil, argv, environ)
        guard spawned == 0 else { throw FixSourceError("cannot run \(binary): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Result(
            status: exitStatus,
            stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    @Test func decodeJSONIsGpsdTPV() throws {
        let log = NMEATestData.nmeaDirectory.appendingPathComponent("quectel-l76k-nmea.log").path
        let result = try Self.run(["gnss", "decode", log, "--json"])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let lines = result.stdout.split(separator: "\n")
        let expected = NMEADecoder.decode(try NMEATestData.log("quectel-l76k-nmea.log")).fixes
        #expect(lines.count == expected.count)
        for (line, fix) in zip(lines, expected) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["class"] as? String == "TPV")
            #expect(object["mode"] as? Int == fix.mode.rawValue)
            #expect(object["time"] as? String == fix.time.map(TPVEncoder.iso8601))
            #expect(abs((object["lat"] as? Double ?? .nan) - (fix.latitude ?? .nan)) < 1e-9)
            #expect(abs((object["lon"] as? Double ?? .nan) - (fix.longitude ?? .nan)) < 1e-9)
            if let alt = fix.altitudeMSL { #expect(abs((object["altMSL"] as? Double ?? .nan) - alt) < 1e-4) }
            if let speed = fix.speed { #expect(abs((object["speed"] as? Double ?? .nan) - speed) < 1e-3) }
        }
        // The first 3D line, checked field by field against gpsd's own TPV for that cycle.
        let gpsd = #"{"class":"TPV","mode":3,"time":"2026-08-05T05:52:34.200Z","lat":47.661981667,"lon":-122.326393667,"altHAE":54.9000,"altMSL":76.5000,"track":286.3500,"speed":0.000}"#
        let ours = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        let theirs = try #require(try JSONSerialization.jsonObject(with: Data(gpsd.utf8)) as? [String: Any])
        for (key, value) in theirs {
            #expect("\(ours[key] ?? "missing")" == "\(value)", "field \(key)")
        }
    }

    @Test func decodeTextOneLinePerFix() throws {
        let log = NMEATestData.nmeaDirectory.appendingPathComponent("ublox-lea-5h.log").path
        let result = try Self.run(["gnss", "decode", log])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 20)
        #expect(lines.first?.hasPrefix("2010-08-21T08:37:23.000Z 3D 51.9259070 4.5776455 alt -4.0 m") == true)
    }

    // The issue asks for 2 or higher; 3 means "daemon unreachable" for every mwctl command,
    // so GNSS input has its own code, 8.
    @Test func unreadableFileExits8WithOneLine() throws {
        let result = try Self.run(["gnss", "decode", "/nonexistent/capture.nmea"])
        #expect(result.status == 8)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "mwctl: error: cannot read /nonexistent/capture.nmea: No such file or directory\n")
    }

    @Test(arguments: ["bogus://x", "tcp://host", "serial:/dev/gps0@1234", "file:/x?speed=warp"])
    func malformedSpecExits2WithOneLine(spec: String) throws {
        let result = try Self.run(["gnss", "watch", "--source", spec])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("mwctl: error: "))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func watchFileSourceFast() throws {
        let log = NMEATestData.nmeaDirectory.appendingPathComponent("bu353-glonass.log").path
        let result = try Self.run(["gnss", "watch", "--source", "file:\(log)?speed=fast", "--json"])
        #expect(result.status == 0)
        #expect(result.stdout.split(separator: "\n").count == NMEADecoder.decode(try NMEATestData.log("bu353-glonass.log")).fixes.count)
    }

    @Test func watchUnreadableFileExits8() throws {
        let result = try Self.run(["gnss", "watch", "--source", "file:/nonexistent.nmea?speed=fast"])
        #expect(result.status == 8)
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func helpDocumentsSpecsAndExitCodes() throws {
        let result = try Self.run(["gnss", "--help"])
        #expect(result.status == 0)
        for fragment in ["serial:PATH[@BAUD]", "gpsd://HOST[:PORT]", "tcp://HOST:PORT", "file:PATH[?speed=realtime|fast]", "Exit status"] {
            #expect(result.stdout.contains(fragment), "help lacks \(fragment)")
        }
    }
}
