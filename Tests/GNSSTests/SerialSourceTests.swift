import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import GNSS

/// A pseudo-terminal pair standing in for a USB receiver: the source opens the slave
/// through a symlink (like a udev `/dev/gps0` link) and runs the real termios set-up.
final class FakeReceiver: @unchecked Sendable {
    let master: Int32
    let slavePath: String
    private let slave: Int32
    private let stop = StopFlag()
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        var master: Int32 = 0
        var slave: Int32 = 0
        guard openpty(&master, &slave, nil, nil, nil) == 0 else { throw FixSourceError.posix("openpty") }
        // Other tests spawn processes concurrently; a child that inherited the master would
        // keep the "receiver" plugged in after unplug().
        _ = fcntl(master, F_SETFD, FD_CLOEXEC)
        _ = fcntl(slave, F_SETFD, FD_CLOEXEC)
        self.master = master
        self.slave = slave
        slavePath = String(cString: ttyname(slave))
        var settings = termios()
        tcgetattr(slave, &settings)
        cfmakeraw(&settings)
        tcsetattr(slave, TCSANOW, &settings)
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
    }

    /// Writes `bytes` over and over, like a receiver that never stops talking.
    func startTalking(_ bytes: [UInt8]) {
        let thread = Thread { [self] in
            var offset = 0
            while !stop.isStopped {
                let chunk = min(256, bytes.count - offset)
                let written = bytes.withUnsafeBytes { write(master, $0.baseAddress! + offset, chunk) }
                if written > 0 { offset = (offset + written) % bytes.count }
                usleep(5_000)
            }
            done.signal()
        }
        thread.start()
    }

    /// Stops talking; the device stays open, as a wedged USB adapter's does.
    func fallSilent() {
        stop.stop()
        done.wait()
    }

    /// Unplugs: stops talking and closes both ends.
    func unplug() {
        if !stop.isStopped { fallSilent() }
        close(master)
        close(slave)
    }
}

@Suite("Serial source", .serialized)
struct SerialSourceTests {
    @Test func detectsBaudReadsAndSurvivesReplug() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-serial-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let link = directory.appendingPathComponent("gps0").path

        let first = try FakeReceiver()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: first.slavePath)
        first.startTalking(try NMEATestData.log("ublox-lea-5h.log"))

        let events = LockedBox<[String]>([])
        let source = SerialFixSource(
            path: link, baud: nil,
            configuration: FixSourceConfiguration(
                initialBackoff: .milliseconds(50), maximumBackoff: .milliseconds(500), silenceReconnect: .seconds(3),
                events: { event in events.set(events.get() + [event.message]) }))
        let box = LockedBox<[GNSSFix]>([])
        // The source's thread starts here, not when the reader task first gets a turn: in the
        // parallel pass that turn can come tens of seconds late (see `sourceDeadline`).
        let fixes = source.fixes()
        let reader = Task {
            for try await fix in fixes { box.set(box.get() + [fix]) }
        }
        defer { reader.cancel() }

        let ublox = try SourceTests.referenceFixes()
        let ubloxTimes = Set(ublox.map(\.timeOfDay))
        #expect(await waitFor(seconds: sourceDeadline) { box.get().filter { ubloxTimes.contains($0.timeOfDay) }.count >= 5 },
                "5 fixes of the first receiver; got \(box.get().count) fixes, events: \(events.get())")
        #expect(events.get().contains { $0.hasPrefix("detected 9600 baud") }, "events: \(events.get())")
        let byTime = Dictionary(ublox.map { ($0.timeOfDay, SourceTests.comparable($0)) }, uniquingKeysWith: { a, _ in a })
        let firstSession = box.get()
        // The first fix may be cut (the source joined mid-cycle); the rest must be exact.
        #expect(firstSession.dropFirst().allSatisfy { byTime[$0.timeOfDay] == SourceTests.comparable($0) })

        // Unplug: the device and its link vanish; then a new pty appears at the same link
        // and sends a different capture.
        first.unplug()
        try FileManager.default.removeItem(atPath: link)
        try await Task.sleep(for: .milliseconds(300))
        let second = try FakeReceiver()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: second.slavePath)
        second.startTalking(try NMEATestData.log("bu353-glonass.log"))
        defer { second.unplug() }

        let bu353Times = Set(NMEADecoder.decode(try NMEATestData.log("bu353-glonass.log")).fixes.map(\.timeOfDay))
        #expect(await waitFor(seconds: sourceDeadline) { box.get().filter { bu353Times.contains($0.timeOfDay) }.count >= 3 },
                "3 fixes of the second receiver; got \(box.get().count) fixes in all, events: \(events.get())")
        #expect(events.get().contains { $0.contains("reconnecting") }, "events: \(events.get())")
        print("serial: \(box.get().count) fixes over two plug-ins; events: \(Set(events.get()).sorted().prefix(6))")
    }

    @Test func aSilentReceiverIsReopened() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-serial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let link = directory.appendingPathComponent("gps0").path
        let receiver = try FakeReceiver()
        defer { receiver.unplug() }
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: receiver.slavePath)
        receiver.startTalking(try NMEATestData.log("ublox-lea-5h.log"))
        let events = LockedBox<[String]>([])
        let source = SerialFixSource(
            path: link, baud: 9600,
            configuration: FixSourceConfiguration(
                initialBackoff: .milliseconds(50), maximumBackoff: .milliseconds(500), silenceReconnect: .seconds(1),
                events: { event in events.set(events.get() + [event.message]) }))
        let fixes = LockedBox<Int>(0)
        let stream = source.fixes()
        let reader = Task { for try await _ in stream { fixes.set(fixes.get() + 1) } }
        defer { reader.cancel() }
        #expect(await waitFor(seconds: sourceDeadline) { fixes.get() >= 2 }, "events: \(events.get())")
        receiver.fallSilent()
        #expect(await waitFor(seconds: sourceDeadline) { events.get().contains { $0.contains("no data for 1 s") } },
                "events: \(events.get())")
    }

}

/// Polls `condition` every 100 ms until it holds or `seconds` pass.
func waitFor(seconds: Double, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return condition()
}
