/// A module-info reply (`[mod, 0x80, impl, rev, extra…]`, or `[mod, 0x80]` when absent).
///
/// Reference §3.2: a module is present when the reply is longer than 2 bytes.
public struct ModuleInfo: Hashable, Sendable, CustomStringConvertible {
    /// The module the reply describes.
    public let module: ModuleID
    /// Implementation byte (which chip/driver), nil when the module is absent.
    public let implementation: UInt8?
    /// Revision byte (feature gates), nil when the module is absent.
    public let revision: UInt8?
    /// Extra bytes after implementation and revision (e.g. Settings extra[1] = firmware build id).
    public let extra: [UInt8]

    /// A present module.
    public init(module: ModuleID, implementation: UInt8, revision: UInt8, extra: [UInt8] = []) {
        self.module = module
        self.implementation = implementation
        self.revision = revision
        self.extra = extra
    }

    /// An absent module (the board answered with the bare header).
    public init(absent module: ModuleID) {
        self.module = module
        implementation = nil
        revision = nil
        extra = []
    }

    /// Parses a module-info reply notification.
    ///
    /// A 3-byte reply (implementation but no revision) is rejected as truncated: the C++ SDK
    /// would read past the end, and a guessed revision could enable unsupported features.
    public init(reply: some Collection<UInt8>) throws(ModuleInfoError) {
        let bytes = Array(reply)
        guard bytes.count >= 2, bytes[1] == 0x80 else { throw .notAModuleInfoReply(bytes) }
        let module = ModuleID(rawValue: bytes[0])
        switch bytes.count {
        case 2: self.init(absent: module)
        case 3: throw .truncated(bytes)
        default:
            self.init(module: module, implementation: bytes[2], revision: bytes[3], extra: Array(bytes[4...]))
        }
    }

    /// Whether the board has this module.
    public var isPresent: Bool { implementation != nil }

    /// The read request that asks for this module's info: `[mod, 0x80]`.
    public static func request(for module: ModuleID) -> Packet {
        Packet(unchecked: module, 0x00, isRead: true)
    }

    public var description: String {
        guard let implementation, let revision else { return "\(module): absent" }
        let tail = extra.isEmpty ? "" : " extra [\(Hex.string(extra))]"
        return "\(module): implementation \(implementation), revision \(revision)\(tail)"
    }
}

/// Why a notification is not a usable module-info reply.
public enum ModuleInfoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The header is not `[mod, 0x80]`.
    case notAModuleInfoReply([UInt8])
    /// Implementation byte without revision byte.
    case truncated([UInt8])

    public var description: String {
        switch self {
        case .notAModuleInfoReply(let b): "[\(Hex.string(b))] is not a module-info reply ([mod, 80, …])"
        case .truncated(let b): "module-info reply [\(Hex.string(b))] has an implementation byte but no revision byte"
        }
    }
}

/// The module-info replies collected during discovery, by module.
public struct ModuleTable: Hashable, Sendable {
    /// Replies by module id. Modules that never answered are missing from the table.
    public private(set) var entries: [ModuleID: ModuleInfo] = [:]

    /// An empty table.
    public init() {}

    /// A table from replies (later replies for the same module win).
    public init(_ infos: [ModuleInfo]) {
        for info in infos { record(info) }
    }

    /// Adds or replaces one module's reply.
    public mutating func record(_ info: ModuleInfo) { entries[info.module] = info }

    /// The reply for a module, if it answered.
    public subscript(module: ModuleID) -> ModuleInfo? { entries[module] }

    /// Whether the module answered and is present.
    public func has(_ module: ModuleID) -> Bool { entries[module]?.isPresent ?? false }

    /// The module's revision, nil when absent or not probed.
    public func revision(of module: ModuleID) -> UInt8? { entries[module]?.revision }
}
