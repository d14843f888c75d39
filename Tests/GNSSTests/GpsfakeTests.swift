import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import GNSS

/// A real gpsd (started by gpsfake on loopback) relays a capture to our gpsd source; the
/// fixes must be the ones the file-replay source produces from the same capture.
@Suite("Real gpsd via gpsfake", .serialized)
struct GpsfakeTests {
    static let gpsfake = "/usr/bin/gpsfake"

    static let installed = FileManager.default.isExecutableFile(atPath: gpsfake)
        && FileManager.default.isExecutableFile(atPath: "/usr/sbin/gpsd")

    // Reported as skipped (with the reason) when gpsd is missing; CI installs it through
    // scripts/install-deps.sh.
    @Test(.enabled(if: installed, "gpsfake/gpsd not installed: apt-get install gpsd gpsd-clients"))
    func gpsdSourceMatchesFileReplay() async throws {
        let log = SourceTests.log
        let port = try freeLoopbackPort()
        // gpsfake and its gpsd run in their own process group so both can be killed at
        // once: gpsfake can ignore SIGTERM (reference §3 pitfalls).
        let gpsfake = try SpawnedProcessGroup(
            Self.gpsfake, ["-1", "-c", "0.03", "-W", "3", "-q", "-P", String(port), log])
        defer { gpsfake.killGroup() }
        // The source retries until gpsd listens; once the log is through and the fixes
        // stop coming, the test stops reading.
        let source = GpsdFixSource(
            host: "127.0.0.1", port: port,
            configuration: FixSourceConfiguration(initialBackoff: .milliseconds(50), maximumBackoff: .milliseconds(200)))
        let received = await collectUntilQuiet(source.fixes(), quiet: .seconds(4), overall: .seconds(60))
        let expected = try SourceTests.referenceFixes()
        let byTime = Dictionary(expected.map { ($0.timeOfDay, SourceTests.comparable($0)) }, uniquingKeysWith: { a, _ in a })
        // gpsfake starts writing as soon as gpsd is up, so the first cycle may be cut;
        // every later fix must equal the file replay's fix for the same cycle.
        let comparable = received.dropFirst()
        let matching = comparable.filter { byTime[$0.timeOfDay] == SourceTests.comparable($0) }
        print("gpsfake: \(received.count) fixes via gpsd, \(matching.count) of \(comparable.count) after the first identical to file replay (log has \(expected.count))")
        #expect(received.count >= 10)
        #expect(matching.count == comparable.count)
    }
}
