/// The few packets of the Linux kernel's Bluetooth management interface (`HCI_CHANNEL_CONTROL`,
/// BlueZ `doc/mgmt-api.txt`, `lib/mgmt.h`) a simulated board needs to end its own link at the
/// link layer, as a real MetaWear does when it acts on `FE 06`: find the central's connection
/// (`Get Connections`) and `Disconnect` it. Pure: bytes in, values out.
///
/// Every packet is a 6-byte header (opcode or event code, controller index, parameter length,
/// each little-endian) and its parameters. An address is 6 bytes, least significant first,
/// and an address type (`1` LE public, `2` LE random).
public enum ManagementPackets {
    /// `MGMT_OP_DISCONNECT`.
    public static let disconnectOpcode: UInt16 = 0x0014
    /// `MGMT_OP_GET_CONNECTIONS`.
    public static let getConnectionsOpcode: UInt16 = 0x0015
    static let commandCompleteEvent: UInt16 = 0x0001
    static let commandStatusEvent: UInt16 = 0x0002
    static let headerSize = 6

    /// A connected device as the kernel names it.
    public struct Address: Sendable, Equatable, CustomStringConvertible {
        /// Most significant byte first, as written `00:AA:01:01:00:01`.
        public var bytes: [UInt8]
        /// `0` BR/EDR, `1` LE public, `2` LE random.
        public var type: UInt8

        public init(bytes: [UInt8], type: UInt8) {
            self.bytes = bytes
            self.type = type
        }

        /// `00:AA:01:01:00:01` (any case); nil unless six hex pairs.
        public init?(_ text: String, type: UInt8) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 6 else { return nil }
            var bytes: [UInt8] = []
            for part in parts {
                guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
                bytes.append(byte)
            }
            self.init(bytes: bytes, type: type)
        }

        public var description: String {
            bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: ":")
                + " (" + (type == 1 ? "LE public" : type == 2 ? "LE random" : "type \(type)") + ")"
        }

        /// Same device, whatever the type.
        func isSameDevice(as other: Address) -> Bool { bytes == other.bytes }
    }

    /// `Get Connections` on controller `index` (`hciN` is index N).
    public static func getConnections(index: UInt16) -> [UInt8] {
        header(getConnectionsOpcode, index: index, length: 0)
    }

    /// `Disconnect` of `address` on controller `index`: the controller ends the link (HCI
    /// Disconnect, reason "remote user terminated"), whoever else holds it.
    public static func disconnect(index: UInt16, address: Address) -> [UInt8] {
        header(disconnectOpcode, index: index, length: 7) + address.bytes.reversed() + [address.type]
    }

    /// What the kernel said to a command.
    public struct Reply: Sendable, Equatable {
        public var opcode: UInt16
        public var index: UInt16
        /// `0` success; ``statusName(_:)`` names the others.
        public var status: UInt8
        /// The command's return parameters (none for a `Command Status`).
        public var parameters: [UInt8]
    }

    /// The command reply a packet carries, nil for any other event (the control channel
    /// also carries the kernel's events for every controller) or a packet too short for its
    /// header's length.
    public static func reply(_ packet: [UInt8]) -> Reply? {
        guard packet.count >= headerSize + 3 else { return nil }
        let event = UInt16(packet[0]) | UInt16(packet[1]) << 8
        let index = UInt16(packet[2]) | UInt16(packet[3]) << 8
        let length = Int(UInt16(packet[4]) | UInt16(packet[5]) << 8)
        guard event == commandCompleteEvent || event == commandStatusEvent, packet.count >= headerSize + length, length >= 3
        else { return nil }
        let body = Array(packet[headerSize..<(headerSize + length)])
        return Reply(opcode: UInt16(body[0]) | UInt16(body[1]) << 8, index: index, status: body[2],
                     parameters: Array(body.dropFirst(3)))
    }

    /// The addresses of a successful `Get Connections` reply's parameters (count, then 7
    /// bytes each); nil when the count and the length disagree.
    public static func connections(_ parameters: [UInt8]) -> [Address]? {
        guard parameters.count >= 2 else { return nil }
        let count = Int(UInt16(parameters[0]) | UInt16(parameters[1]) << 8)
        guard parameters.count == 2 + count * 7 else { return nil }
        return (0..<count).map { entry in
            let start = 2 + entry * 7
            return Address(bytes: parameters[start..<(start + 6)].reversed(), type: parameters[start + 6])
        }
    }

    /// `lib/mgmt.h`'s name for a status.
    public static func statusName(_ status: UInt8) -> String {
        switch status {
        case 0x00: "success"
        case 0x01: "unknown command"
        case 0x02: "not connected"
        case 0x03: "failed"
        case 0x0a: "busy"
        case 0x0d: "invalid parameters"
        case 0x0f: "not powered"
        case 0x11: "invalid index"
        case 0x14: "permission denied"
        default: "status 0x" + String(status, radix: 16)
        }
    }

    private static func header(_ opcode: UInt16, index: UInt16, length: UInt16) -> [UInt8] {
        [UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(index & 0xFF), UInt8(index >> 8), UInt8(length & 0xFF), UInt8(length >> 8)]
    }
}
