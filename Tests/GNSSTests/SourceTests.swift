import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import GNSS

/// The four sources against real I/O: files, a loopback TCP peer, a real gpsd fed by
/// gpsfake, and a pty standing in for a serial receiver.
@Suite("Fix sources", .serialized)
struct SourceTests {
    static let log = NMEATestData.nmeaDirectory.appendingPathComponent("ublox-lea-5h.log").path

    /// What must agree between sources: everything but arrival time and clock offset.
    static func comparable(_ fix: GNSSFix) -> String {
        var copy = fix
        copy.arrival = Date(timeIntervalSince1970: 0)
        copy.systemClockOffset = nil
        return TPVEncoder.encode(copy) + " \(copy.timeOfDay.microseconds) \(copy.hdop ?? -1) \(copy.satellitesUsed ?? -1)"
    }

    static func referenceFixes(_ path: String = log) throws -> [GNSSFix] {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        return NMEADecoder.decode(bytes, options: .live).fixes
    }

    var quiet: FixSourceConfiguration { FixSourceConfiguration(reconnects: false) }

    @Test func fileReplayFastMatchesDecoder() async throws {
        let source = FileReplayFixSource(path: Self.log, pacing: .fast,
                                         configuration: FixSourceConfiguration(assembler: .init()))
        let fixes = try await collect(source.fixes(), limit: .max, timeout: .seconds(sourceDeadline))
        let expected = NMEADecoder.decode(try NMEATestData.log("ublox-lea-5h.log")).fixes
        #expect(fixes.map(Self.comparable) == expected.map(Self.comparable))
        #expect(fixes.count == 20)
    }

    @Test func fileReplayRealtimeIsPaced() async throws {
        // Three cycles one second apart: the replay must take at least ~2 s (lower bound
        // only; a loaded machine may be slower, never faster).
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("three.nmea").path
        var text = "# three cycles\n"
        for second in 0..<3 {
            text += NMEATestData.sentence("GPRMC,12000\(second).00,A,5155.55442,N,00434.65873,E,0.0,,210810,,,A") + "\r\n"
            text += NMEATestData.sentence("GPGGA,12000\(second).00,5155.55442,N,00434.65873,E,1,06,2.51,-4.0,M,46.0,M,,") + "\r\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let spec = try GNSSSourceSpec(parsing: "file:\(path)?speed=realtime")
        let start = ContinuousClock.now
        let fixes = try await collect(spec.makeSource(configuration: quiet).fixes(), limit: .max, timeout: .seconds(sourceDeadline))
        #expect(fixes.count == 3)
        #expect(ContinuousClock.now - start >= .milliseconds(1900))
        // Arrival times follow the pacing too.
        #expect(fixes[2].arrival.timeIntervalSince(fixes[0].arrival) >= 1.9)
    }

    @Test func fileReplayUnreadableThrows() async throws {
        let source = FileReplayFixSource(path: "/nonexistent/gps.nmea", pacing: .fast)
        let error = await #expect(throws: FixSourceError.self) {
            _ = try await collect(source.fixes(), limit: .max, timeout: .seconds(sourceDeadline))
        }
        // The source's own error, not `collect` giving up.
        #expect(error?.message.contains("/nonexistent/gps.nmea") == true, "\(String(describing: error))")
    }

    @Test func tcpSourceReadsAndReconnects() async throws {
        let listener = try LoopbackListener()
        let bytes = try NMEATestData.log("ublox-lea-5h.log")
        // The peer serves the log, hangs up, then serves it again: the source must come
        // back on its own and deliver both copies.
        let server = Thread {
            _ = listener.serveOnce(bytes)
            _ = listener.serveOnce(bytes)
        }
        server.start()
        let source = TCPFixSource(host: "127.0.0.1", port: listener.port,
                                  configuration: FixSourceConfiguration(initialBackoff: .milliseconds(50)))
        let fixes = try await collect(source.fixes(), limit: 40, timeout: .seconds(sourceDeadline))
        let expected = try Self.referenceFixes().map(Self.comparable)
        #expect(fixes.map(Self.comparable) == expected + expected)
    }

    @Test func gpsdSourceSendsWatchAndSkipsJSON() async throws {
        let listener = try LoopbackListener()
        let banner = Array(#"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#.utf8) + [0x0A]
        let bytes = banner + (try NMEATestData.log("ublox-lea-5h.log"))
        let received = LockedBox<[UInt8]>([])
        let server = Thread { received.set(listener.serveOnce(bytes)) }
        server.start()
        let source = GpsdFixSource(host: "127.0.0.1", port: listener.port, configuration: quiet)
        let fixes = try await collect(source.fixes(), limit: .max, timeout: .seconds(sourceDeadline))
        #expect(String(decoding: received.get(), as: UTF8.self) == GpsdFixSource.watchCommand)
        #expect(fixes.map(Self.comparable) == (try Self.referenceFixes()).map(Self.comparable))
    }

    @Test func quietReceiverStillGetsItsLastFixOut() async throws {
        // One cycle, then silence with the connection open: the open cycle must be
        // emitted after the quiet period instead of waiting for a next cycle.
        let listener = try LoopbackListener()
        let cycle = NMEATestData.sentence("GPRMC,120000.00,A,5155.55442,N,00434.65873,E,0.0,,210810,,,A") + "\r\n"
            + NMEATestData.sentence("GPGGA,120000.00,5155.55442,N,00434.65873,E,1,06,2.51,-4.0,M,46.0,M,,") + "\r\n"
        // Held open past the test's own limit, so the fix can only come from the quiet flush,
        // never from the end of the stream.
        let closed = LockedBox(false)
        let server = Thread {
            _ = listener.serveOnce(Array(cycle.utf8), holdOpenFor: .seconds(sourceDeadline + 10))
            closed.set(true)
        }
        server.start()
        let source = TCPFixSource(
            host: "127.0.0.1", port: listener.port,
            configuration: FixSourceConfiguration(reconnects: false, quietFlush: .milliseconds(600)))
        let fixes = try await collect(source.fixes(), limit: 1, timeout: .seconds(sourceDeadline))
        let received = Date()
        #expect(!closed.get(), "the fix came only when the peer hung up")
        let fix = try #require(fixes.first)
        #expect(fixes.count == 1)
        #expect(fix.mode == .threeD)
        // Arrival is when the bytes came, not when the flush happened (≥ 0.6 s later).
        #expect(received.timeIntervalSince(fix.arrival) >= 0.55)
    }

    @Test func fixRoundTripsThroughCodable() throws {
        let fix = try #require(try Self.referenceFixes().first)
        let data = try JSONEncoder().encode(fix)
        #expect(try JSONDecoder().decode(GNSSFix.self, from: data) == fix)
    }

    @Test func unreachablePeerFailsWithoutReconnect() async throws {
        let port = try freeLoopbackPort()
        let source = TCPFixSource(host: "127.0.0.1", port: port, configuration: quiet)
        let error = await #expect(throws: FixSourceError.self) {
            _ = try await collect(source.fixes(), limit: 1, timeout: .seconds(sourceDeadline))
        }
        // The source's own error, not `collect` giving up.
        #expect(error?.message.hasPrefix("timed out") == false, "\(String(describing: error))")
    }
}

/// A value shared with a helper thread.
final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}
