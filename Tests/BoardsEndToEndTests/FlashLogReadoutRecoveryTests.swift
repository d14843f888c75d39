import BlueZ
import Boards
import Foundation
import MetaWear
import MetaWearBoardModel
import Testing

/// A flash-log readout that stops delivering (issue 21: in release builds the download stalled
/// for good after a notification was lost on the way) is asked for again from what the board
/// still holds, and every logged sample arrives exactly once. In-memory transport with the
/// board model answering; the test decides which notification never reaches the session.
@Suite("Board session: a flash-log readout that loses a notification")
struct FlashLogReadoutRecoveryTests {
    private let address = BluetoothAddress("D1:5E:AA:0F:0F:03")!

    /// Replies and the stream watchdog as in FlashLogSessionTests (bytes, not timing); a
    /// readout silent for 300 ms counts as stopped, so a test does not wait the default.
    private func options() throws -> BoardSessionOptions {
        var options = try testOptions(pauseAfterConnectionParameters: 0)
        options.watchdogMinimum = .seconds(600)
        options.handshake.replyTimeoutMilliseconds = 10_000
        options.flashLogging = true
        options.readoutStallTimeout = .milliseconds(300)
        return options
    }

    /// Logs 3 s of 100 Hz gyro (600 entries: a full 512-entry page and part of the next), then
    /// downloads it while `lose` drops notifications on the way; the test confirms each page
    /// the session reports, as the recorder does once it is stored. Returns the downloaded
    /// gyro samples' indices, in order.
    private func download(losing lose: @escaping @Sendable ([UInt8]) -> Bool) async throws -> [UInt64] {
        let transport = InMemoryBoardTransport()
        let session = BoardSession(address: address, options: try options(), transport: transport)
        var indices: [UInt64] = []
        try await runRecorded(session) { session, recorder in
            try await waitUntil("logging") { if case .logging = recorder.flashLog(address).last { true } else { false } }
            let link = try await openedLink(transport, 0)
            link.stream(milliseconds: 3000)
            await session.downloadFlashLog()
            var confirmed = 0
            try await waitUntil("the download complete", within: .seconds(60)) {
                let pages = recorder.downloads(address)
                if pages.last?.complete == true { return true }
                if pages.count > confirmed {
                    confirmed = pages.count
                    await session.confirmFlashLogPage()
                }
                link.stream(milliseconds: 20, losing: lose)
                try? await Task.sleep(for: .milliseconds(20))
                return false
            }
            indices = recorder.downloads(address).flatMap(\.gyro).map { UInt64(UInt16(bitPattern: $0.raw.x)) }
        }
        return indices
    }

    /// Every sample from the log's first on, once and in order: what the board logged from
    /// the gyro's start (the flash log starts before the sensors) up to the readout.
    private func expectEverySampleOnce(_ indices: [UInt64], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(indices.count >= 300, "3 s at 100 Hz at least: \(indices.count)", sourceLocation: sourceLocation)
        let missing = Set(0..<UInt64(indices.count)).subtracting(indices).sorted()
        #expect(indices == Array(0..<UInt64(indices.count)),
                "\(indices.count) samples, \(indices.count - Set(indices).count) twice, missing \(missing.prefix(5))…",
                sourceLocation: sourceLocation)
    }

    /// The first page's end (`0B 0D`) is lost: the board waits for a confirm of a page the
    /// session never saw end. Before the fix the download waited for ever.
    @Test func aLostPageEndIsAskedForAgain() async throws {
        let lost = LostOnce { $0 == [0x0B, 0x0D] }
        expectEverySampleOnce(try await download(losing: lost.take))
        #expect(lost.happened)
    }

    /// One readout notification (two entries, one sample) in the middle of the first page is
    /// lost: the board's next progress count shows it, and the readout is asked for again
    /// before the page is confirmed away. Before the fix the page was reported without it.
    @Test func aLostEntryInThePageIsAskedForAgain() async throws {
        let lost = LostOnce(skipping: 100) { $0.count == 20 && $0[0] == 0x0B && $0[1] == 0x07 }
        expectEverySampleOnce(try await download(losing: lost.take))
        #expect(lost.happened)
    }
}

/// Loses the first notification `matches` picks after `skipping` earlier matches, once.
private final class LostOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var skip: Int
    private var done = false
    private let matches: @Sendable ([UInt8]) -> Bool

    init(skipping: Int = 0, _ matches: @escaping @Sendable ([UInt8]) -> Bool) {
        skip = skipping
        self.matches = matches
    }

    var happened: Bool { lock.withLock { done } }

    @Sendable func take(_ bytes: [UInt8]) -> Bool {
        lock.withLock {
            guard !done, matches(bytes) else { return false }
            if skip > 0 {
                skip -= 1
                return false
            }
            done = true
            return true
        }
    }
}
