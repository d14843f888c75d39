#if canImport(Glibc)
import Glibc
#endif

/// A socket on the kernel's Bluetooth management channel (`AF_BLUETOOTH`, `BTPROTO_HCI`,
/// `HCI_CHANNEL_CONTROL`), the interface bluetoothd itself drives the controllers through.
/// Commands that change a link need `CAP_NET_ADMIN` (root in the real-BlueZ VM). Non-blocking:
/// a reply is awaited by draining what arrived and sleeping between tries, never by a blocking
/// read on the cooperative pool.
final class ManagementSocket {
    private var descriptor: Int32

    /// Opens and binds the channel; the error names the step and errno.
    init() throws(ManagementError) {
        let addressFamilyBluetooth: Int32 = 31  // AF_BLUETOOTH
        let protocolHCI: Int32 = 1  // BTPROTO_HCI
        descriptor = socket(addressFamilyBluetooth, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                            protocolHCI)
        guard descriptor >= 0 else { throw ManagementError("socket(AF_BLUETOOTH, BTPROTO_HCI) failed: \(Self.errnoText())") }
        // struct sockaddr_hci { sa_family_t family; unsigned short dev; unsigned short channel; }:
        // no controller (HCI_DEV_NONE) on the control channel (HCI_CHANNEL_CONTROL = 3).
        var address: (UInt16, UInt16, UInt16) = (UInt16(addressFamilyBluetooth), 0xFFFF, 3)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, 6) }
        }
        guard bound == 0 else {
            let text = Self.errnoText()
            close()
            throw ManagementError("bind to the management channel failed: \(text)")
        }
    }

    deinit { close() }

    /// Sends one command packet (``ManagementPackets``).
    func send(_ packet: [UInt8]) throws(ManagementError) {
        let written = packet.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard written == packet.count else { throw ManagementError("sending a management command failed: \(Self.errnoText())") }
    }

    /// The reply to `opcode` on controller `index`, waiting for it at most `limit`; the
    /// channel's other events are skipped.
    func reply(to opcode: UInt16, index: UInt16, within limit: Duration) async throws(ManagementError) -> ManagementPackets.Reply {
        let deadline = ContinuousClock.now + limit
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                if let reply = ManagementPackets.reply(Array(buffer.prefix(count))), reply.opcode == opcode, reply.index == index {
                    return reply
                }
                continue
            }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK else {
                throw ManagementError("reading the management channel failed: \(Self.errnoText())")
            }
            guard ContinuousClock.now < deadline else {
                throw ManagementError("no reply to management command 0x\(String(opcode, radix: 16)) within \(limit)")
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// How ``disconnect(_:controller:)`` ended.
    enum DisconnectOutcome: Sendable, Equatable {
        /// The controller ended the link to this address.
        case disconnected(ManagementPackets.Address)
        /// The controller has no link to the device (already gone).
        case notConnected
    }

    /// Ends the controller's link to `device` (`00:AA:01:01:00:01`, whatever its address type)
    /// on controller `index` (`hciN`: N) at the link layer, as the board's own Bluetooth stack
    /// would: `Get Connections` for the link's address type, then `Disconnect`, which the
    /// kernel answers once the controller reported the link down. Each reply is awaited at
    /// most `limit`.
    static func disconnect(_ device: String, controller index: UInt16, limit: Duration = .seconds(1))
        async throws(ManagementError) -> DisconnectOutcome {
        guard let wanted = ManagementPackets.Address(device, type: 0) else { throw ManagementError("'\(device)' is no Bluetooth address") }
        let channel = try ManagementSocket()
        defer { channel.close() }
        try channel.send(ManagementPackets.getConnections(index: index))
        let listed = try await channel.reply(to: ManagementPackets.getConnectionsOpcode, index: index, within: limit)
        guard listed.status == 0, let connections = ManagementPackets.connections(listed.parameters) else {
            throw ManagementError("Get Connections on hci\(index): \(ManagementPackets.statusName(listed.status))")
        }
        guard let link = connections.first(where: { $0.isSameDevice(as: wanted) }) else { return .notConnected }
        try channel.send(ManagementPackets.disconnect(index: index, address: link))
        let ended = try await channel.reply(to: ManagementPackets.disconnectOpcode, index: index, within: limit)
        switch ended.status {
        case 0: return .disconnected(link)
        case 0x02: return .notConnected
        default: throw ManagementError("Disconnect of \(link) on hci\(index): \(ManagementPackets.statusName(ended.status))")
        }
    }

    func close() {
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) + " (errno \(errno))" }
}

/// What went wrong on the management channel, in words.
struct ManagementError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
