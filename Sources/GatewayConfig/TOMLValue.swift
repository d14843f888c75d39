/// A place in a TOML file (1-based).
public struct TOMLPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Line, from 1.
    public let line: Int
    /// Column in characters, from 1.
    public let column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.line, lhs.column) < (rhs.line, rhs.column) }
    public var description: String { "\(line):\(column)" }
}

/// A TOML value with where it was written.
public indirect enum TOMLValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)
    case array([TOMLNode])
    case table(TOMLTable)

    /// The TOML type name, for messages ("expected an integer, got a string").
    public var typeName: String {
        switch self {
        case .string: "a string"
        case .integer: "an integer"
        case .float: "a float"
        case .boolean: "a boolean"
        case .array: "an array"
        case .table: "a table"
        }
    }
}

/// A value and its position (of the value; `keyPosition` is where its key was written).
public struct TOMLNode: Sendable, Equatable {
    public var value: TOMLValue
    /// Where the value starts.
    public var position: TOMLPosition
    /// Where the key naming it was written (the header line for tables).
    public var keyPosition: TOMLPosition
}

/// A table: keys in file order.
public struct TOMLTable: Sendable, Equatable {
    /// Entries in the order they were defined.
    public internal(set) var entries: [(key: String, node: TOMLNode)] = []

    public init() {}

    /// The node for `key`.
    public subscript(key: String) -> TOMLNode? {
        entries.first { $0.key == key }?.node
    }

    /// The keys, in file order.
    public var keys: [String] { entries.map(\.key) }

    mutating func set(_ key: String, _ node: TOMLNode) {
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].node = node
        } else {
            entries.append((key, node))
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.node == $1.node }
    }
}

/// A syntax error with its position.
public struct TOMLSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public let position: TOMLPosition
    public let message: String
    public var description: String { "\(position): \(message)" }
}
