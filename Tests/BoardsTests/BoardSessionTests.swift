import BlueZ
import Boards
import DBus
import Foundation
import MetaWear
import TestSupport
import Testing

private let boardAddress = "D1:5E:AA:01:02:03"

/// Collects a session's events so tests can wait for states without consuming them twice.
private actor EventLog {
    private(set) var states: [BoardState] = []
    func append(_ event: BoardEvent) {
        if case .state(let state) = event.kind { states.append(state) }
    }
    func count(where predicate: @Sendable (BoardState) -> Bool) -> Int { states.filter(predicate).count }
}

private func isHandshaking(_ state: BoardState) -> Bool { state == .handshaking }
private func isLost(_ state: BoardState) -> Bool { if case .lost = state { true } else { false } }

/// The board session's connection lifecycle against python3-dbusmock (which has no MetaWear
/// board behind it: the handshake runs until its first module-info read, which is enough to
/// see the session reach and re-reach the link). Streaming end-to-end is tested against mwsim.
@Suite("Board session lifecycle over D-Bus (python3-dbusmock peer)", .enabled(if: MockBlueZ.isAvailable), .serialized)
struct BoardSessionTests {
    private func options() throws -> BoardSessionOptions {
        let configuration = try StreamingConfiguration(gyro: try GyroConfiguration(rateHertz: 100, rangeDegreesPerSecond: 2000))
        // Long reply timeouts keep the handshake parked at its first module-info read.
        let handshake = HandshakeSequencer.Options(attemptsPerRead: 1, replyTimeoutMilliseconds: 60_000)
        let reconnection = ReconnectionPolicy(connectTimeout: .seconds(10), servicesTimeout: .seconds(10),
                                              linkDownTimeout: .seconds(1), transientBackoff: .milliseconds(50),
                                              deviceGoneBackoff: .milliseconds(200), baseBackoff: .milliseconds(100),
                                              maximumBackoff: .seconds(1))
        return BoardSessionOptions(configuration: configuration, handshake: handshake, reconnection: reconnection,
                                   batteryInterval: nil, seed: 7)
    }

    private func run(_ body: (MockBlueZ, BoardSession, EventLog) async throws -> Void) async throws {
        let mock = try await MockBlueZ()
        defer { mock.stop() }
        let client = try await BlueZClient.open(busAddress: mock.bus.address, discoveryUUIDs: [MetaWearGATT.service])
        let following = Task { await client.run() }
        let address = try #require(BluetoothAddress(boardAddress))
        let session = BoardSession(address: address, client: client, options: try options())
        let log = EventLog()
        let collector = Task { for await event in session.events { await log.append(event) } }
        async let _ = session.run()
        do {
            try await body(mock, session, log)
        } catch {
            await session.stop()
            await client.close()
            await following.value
            throw error
        }
        await session.stop()
        await collector.value
        await client.close()
        await following.value
    }

    /// Waits until the mock has seen `count` module-info requests for module 0x01.
    private func waitForHandshakeWrites(_ mock: MockBlueZ, count: Int) async throws {
        try await waitUntil("\(count) handshake(s) reaching module discovery") {
            try await mock.writes(boardAddress).filter { $0.bytes == [0x01, 0x80] && $0.type == "command" }.count >= count
        }
    }

    @Test func scansConnectsAndStartsTheHandshake() async throws {
        try await run { mock, _, log in
            try await Task.sleep(for: .milliseconds(200))
            // The board appears only now: the session must find it by scanning.
            try await mock.addBoard(boardAddress)
            try await waitForHandshakeWrites(mock, count: 1)
            let states = await log.states
            #expect(states.first == .connecting)
            #expect(states.contains(.handshaking))
            // The DIS strings were read before module discovery began (notifications on first).
            #expect(try await mock.state(boardAddress)["Notifying"] == .boolean(true))
        }
    }

    @Test func aDroppedLinkIsReconnectedWithoutHelp() async throws {
        try await run { mock, _, log in
            try await mock.addBoard(boardAddress)
            try await waitForHandshakeWrites(mock, count: 1)
            try await mock.call("DropLink", [.string(boardAddress)])
            try await waitForHandshakeWrites(mock, count: 2)
            #expect(await log.count(where: isLost) >= 1)
            #expect(await log.count(where: isHandshaking) >= 2)
        }
    }

    @Test func aRemovedDeviceIsFoundAgain() async throws {
        try await run { mock, _, log in
            try await mock.addBoard(boardAddress)
            try await waitForHandshakeWrites(mock, count: 1)
            try await mock.call("RemoveBoard", [.string(boardAddress)])
            try await waitUntil("the loss to be reported") { await log.count(where: isLost) >= 1 }
            try await Task.sleep(for: .milliseconds(300))
            try await mock.addBoard(boardAddress)
            try await waitForHandshakeWrites(mock, count: 1)
            #expect(await log.count(where: isHandshaking) >= 2)
        }
    }

    @Test func aBluetoothdRestartIsSurvived() async throws {
        try await run { mock, _, log in
            try await mock.addBoard(boardAddress)
            try await waitForHandshakeWrites(mock, count: 1)
            mock.killService()
            try await waitUntil("the loss to be reported") { await log.count(where: isLost) >= 1 }
            try await mock.startService()
            try await mock.addBoard(boardAddress)
            try await waitForHandshakeWrites(mock, count: 1)
            #expect(await log.count(where: isHandshaking) >= 2)
        }
    }

    @Test func stopDisconnectsAndFinishesTheEvents() async throws {
        let mock = try await MockBlueZ()
        defer { mock.stop() }
        let client = try await BlueZClient.open(busAddress: mock.bus.address, discoveryUUIDs: [MetaWearGATT.service])
        let following = Task { await client.run() }
        let address = try #require(BluetoothAddress(boardAddress))
        let session = BoardSession(address: address, client: client, options: try options())
        let log = EventLog()
        let collector = Task { for await event in session.events { await log.append(event) } }
        async let _ = session.run()
        try await mock.addBoard(boardAddress)
        try await waitForHandshakeWrites(mock, count: 1)
        await session.stop()
        await collector.value
        #expect(await log.states.last == .stopped)
        // BlueZ itself (the mock) is disconnected and no longer notifying when stop returns;
        // the client's property cache follows from BlueZ's PropertiesChanged signal, which
        // may be read just after Disconnect's reply.
        #expect(try await mock.state(boardAddress)["Connected"] == .boolean(false))
        #expect(try await mock.state(boardAddress)["Notifying"] == .boolean(false))
        try await waitUntil("the client to see the board disconnected") { await client.device(address)?.connected == false }
        await client.close()
        await following.value
    }
}
