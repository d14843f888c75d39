import Foundation
import Basics

/// A document field value in Firestore's type system, so sizes are computed the way
/// Firestore counts them and the Uplink can encode the same tree for the wire.
public indirect enum FirestoreValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    /// A float32 reading: a double in Firestore, printed with the float32's own shortest
    /// digits so it reads back to exactly the value recorded (``ShortestDecimal``).
    case float(Float)
    case string(String)
    case array([FirestoreValue])
    /// Keys kept in insertion order for stable output.
    case map([(String, FirestoreValue)])

    public static func == (l: Self, r: Self) -> Bool {
        switch (l, r) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.double(a), .double(b)): a == b
        case let (.float(a), .float(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.map(a), .map(b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    public func hash(into h: inout Hasher) {
        switch self {
        case .null: h.combine(0)
        case let .bool(b): h.combine(b)
        case let .integer(i): h.combine(i)
        case let .double(d): h.combine(d)
        case let .float(f): h.combine(f)
        case let .string(s): h.combine(s)
        case let .array(a): h.combine(a)
        case let .map(m): for (k, v) in m { h.combine(k); h.combine(v) }
        }
    }

    /// Size by Firestore's storage-size rules: string = UTF-8 bytes + 1; integer, double and
    /// timestamp 8; bool and null 1; array = sum of elements; map = sum of (key + value).
    public var firestoreSize: Int {
        switch self {
        case .null, .bool: 1
        case .integer, .double, .float: 8
        case let .string(s): s.utf8.count + 1
        case let .array(a): a.reduce(0) { $0 + $1.firestoreSize }
        case let .map(m): m.reduce(0) { $0 + $1.0.utf8.count + 1 + $1.1.firestoreSize }
        }
    }

    /// Compact plain JSON text (``JSONWriter/plain(_:)``).
    public var jsonText: String {
        var out = JSONWriter(capacity: 256)
        out.plain(self)
        return out.text
    }
}

/// Firestore's document size: name + fields + 32, where the name is the sum of the
/// collection and document ID string sizes + 16 (cloud.google.com/firestore/docs/storage-size).
public enum FirestoreSize {
    /// The document size limit, bytes.
    public static let documentLimit = 1_048_576

    /// Size of the document `collection/documentID` holding `fields`.
    public static func document(collection: String, documentID: String, fields: [(String, FirestoreValue)]) -> Int {
        let name = collection.utf8.count + 1 + documentID.utf8.count + 1 + 16
        return name + FirestoreValue.map(fields).firestoreSize + 32
    }
}
