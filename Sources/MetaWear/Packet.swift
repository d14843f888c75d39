/// One MetaWear command or notification: `[module, register|flags, (index), payload…]`.
///
/// Reference §2.1: bit 7 of the register byte marks a read (request or its reply), bit 6 a
/// "silent" read whose value the board routes on-board and never sends to the host.
public struct Packet: Hashable, Sendable, CustomStringConvertible {
    /// Longest packet the board accepts or sends (2 header bytes + 18 payload bytes).
    public static let maximumLength = 20
    /// Bit 7 of the register byte.
    public static let readFlag: UInt8 = 0x80
    /// Bit 6 of the register byte.
    public static let silentFlag: UInt8 = 0x40

    /// Module the packet addresses.
    public var module: ModuleID
    /// Register number (0x00...0x3F), without flags.
    public var register: UInt8
    /// Read request, or the board's reply to one.
    public var isRead: Bool
    /// Silent read (`0xC0|reg`): the board answers nothing to the host. Gateways never send these.
    public var isSilent: Bool
    /// Optional instance byte (data-processor id, timer id, …). Decoding never fills this in,
    /// because only the register's meaning tells whether byte 2 is an index; it stays in `payload`.
    public var index: UInt8?
    /// Bytes after the header (and index, if any).
    public var payload: [UInt8]

    /// Builds a packet, checking it fits in one BLE write.
    public init(
        module: ModuleID, register: UInt8, isRead: Bool = false, isSilent: Bool = false,
        index: UInt8? = nil, payload: [UInt8] = []
    ) throws(PacketError) {
        guard register <= 0x3F else { throw .registerOutOfRange(register) }
        let length = 2 + (index == nil ? 0 : 1) + payload.count
        guard length <= Self.maximumLength else { throw .tooLong(length) }
        self.init(unchecked: module, register, isRead: isRead, isSilent: isSilent, index: index, payload: payload)
    }

    /// Builder for the fixed, known-good commands inside this module.
    init(
        unchecked module: ModuleID, _ register: UInt8, isRead: Bool = false, isSilent: Bool = false,
        index: UInt8? = nil, payload: [UInt8] = []
    ) {
        self.module = module
        self.register = register
        self.isRead = isRead
        self.isSilent = isSilent
        self.index = index
        self.payload = payload
    }

    /// Parses a received or captured packet. The index byte (if any) is left in `payload`.
    public init(bytes: some Collection<UInt8>) throws(PacketError) {
        let array = Array(bytes)
        guard array.count >= 2 else { throw .tooShort(array.count) }
        guard array.count <= Self.maximumLength else { throw .tooLong(array.count) }
        self.init(
            unchecked: ModuleID(rawValue: array[0]), array[1] & 0x3F,
            isRead: array[1] & Self.readFlag != 0, isSilent: array[1] & Self.silentFlag != 0,
            payload: Array(array[2...]))
    }

    /// The register byte with flags, as sent on the wire.
    public var registerByte: UInt8 {
        register | (isRead ? Self.readFlag : 0) | (isSilent ? Self.silentFlag : 0)
    }

    /// Wire bytes, ready to write to the command characteristic (326a9001).
    public var bytes: [UInt8] {
        var out: [UInt8] = [module.rawValue, registerByte]
        out.reserveCapacity(3 + payload.count)
        if let index { out.append(index) }
        out.append(contentsOf: payload)
        return out
    }

    /// Only macro (0x0F) writes use write-with-response; everything else is write-without-response.
    public var requiresWriteWithResponse: Bool { module == .macro }

    /// Hex, e.g. `13 03 27 02`.
    public var description: String { Hex.string(bytes) }
}

/// Why bytes are not a valid packet.
public enum PacketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer than the 2 header bytes.
    case tooShort(Int)
    /// Longer than the 20-byte BLE packet.
    case tooLong(Int)
    /// Register numbers are 6 bits; flags are separate fields.
    case registerOutOfRange(UInt8)

    public var description: String {
        switch self {
        case .tooShort(let n): "packet of \(n) byte(s) is shorter than the 2-byte header"
        case .tooLong(let n): "packet of \(n) bytes exceeds the 20-byte MetaWear packet limit"
        case .registerOutOfRange(let r): "register 0x\(Hex.byte(r)) is above 0x3F (flags are separate fields)"
        }
    }
}
