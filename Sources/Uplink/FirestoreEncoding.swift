import Basics
import Foundation
import Recording

/// Firestore REST's typed JSON encoding of values and commit requests.
///
/// Each value is an object with one key (`integerValue` as a string, `doubleValue` as a
/// number or "NaN"/"Infinity"/"-Infinity", `stringValue`, `booleanValue`, `nullValue`,
/// `arrayValue.values`, `mapValue.fields`).
public enum FirestoreEncoding {
    /// Appends the typed encoding of `value`.
    public static func write(_ value: FirestoreValue, to out: inout String) {
        var bytes = JSONWriter()
        bytes.typed(value)
        out += String(decoding: bytes.bytes, as: UTF8.self)
    }

    /// Appends `{"name": value, ...}` in typed encoding.
    public static func writeFields(_ fields: [(String, FirestoreValue)], to out: inout String) {
        var bytes = JSONWriter()
        bytes.typedFields(fields)
        out += String(decoding: bytes.bytes, as: UTF8.self)
    }

    /// The `documents:commit` body for `documents`, in order, each created only if absent
    /// (`currentDocument.exists=false`), so a replay of a first write is refused (ALREADY_EXISTS)
    /// rather than written twice. A `records` document gets `gscope_data` through an
    /// `appendMissingElements` transform so a replay never repeats a name and the seal order
    /// is kept. A revised `records` document (``RecordsDocument/revision`` > 0) replaces the
    /// one stored, without a precondition: whether an earlier version landed upstream is not
    /// known here (its upload may have been cut off after the commit), and the full replace
    /// gives the same document either way, replayed or not. So does a revised chunk
    /// (``RealtimeDataDocument/revised``: its gap marks corrected after it was sealed).
    public static func commitBody(_ documents: [SinkDocument], databasePath: String) -> String {
        String(decoding: commitBodyBytes(documents, databasePath: databasePath), as: UTF8.self)
    }

    /// `commitBody` as UTF-8 bytes (what goes on the wire). `encoded` supplies writes
    /// prepared earlier (by document name); not for a document that replaces a stored one,
    /// whose earlier version may have been prepared under the same name.
    public static func commitBodyBytes(_ documents: [SinkDocument], databasePath: String,
                                       encoded: (String) -> [UInt8]? = { _ in nil }) -> [UInt8] {
        var out = JSONWriter(capacity: documents.count * 900_000)
        out.raw(#"{"writes":["#)
        for (i, doc) in documents.enumerated() {
            if i > 0 { out.raw(",") }
            if !doc.replacesStored, let ready = encoded(doc.name) {
                out.bytes.append(contentsOf: ready)
            } else {
                writeObject(doc, databasePath: databasePath, into: &out)
            }
        }
        out.raw("]}")
        return out.bytes
    }

    /// One `Write` object of a commit, as bytes.
    public static func writeBytes(_ doc: SinkDocument, databasePath: String) -> [UInt8] {
        var out = JSONWriter(capacity: 900_000)
        writeObject(doc, databasePath: databasePath, into: &out)
        return out.bytes
    }

    /// `writeBytes` through the general value-tree encoder (`doc.fields`): the reference the
    /// direct `realtime_data` writer is tested and benchmarked against (same bytes).
    public static func valueTreeWriteBytes(_ doc: SinkDocument, databasePath: String) -> [UInt8] {
        var out = JSONWriter(capacity: 900_000)
        writeObject(doc, databasePath: databasePath, into: &out, direct: false)
        return out.bytes
    }

    static func writeObject(_ doc: SinkDocument, databasePath: String, into out: inout JSONWriter, direct: Bool = true) {
        out.raw(#"{"update":{"name":"#)
        out.string("\(databasePath)/documents/\(doc.collection)/\(doc.name)")
        out.raw(#","fields":"#)
        switch doc {
        case let .realtimeData(document):
            if direct { out.typedRealtimeFields(document) } else { out.typedFields(doc.fields) }
            out.raw("}")
            if document.revised {
                out.raw("}")
                return
            }
        case let .records(record):
            // The array starts empty in the create and is filled by the transform in the
            // same atomic write.
            let fields = record.fields.map { $0.0 == "gscope_data" ? ($0.0, FirestoreValue.array([])) : $0 }
            out.typedFields(fields)
            out.raw(#"},"updateTransforms":[{"fieldPath":"gscope_data","appendMissingElements":{"values":["#)
            for (j, name) in record.gscopeData.enumerated() {
                if j > 0 { out.raw(",") }
                out.typed(.string(name))
            }
            out.raw("]}}]")
            if record.revision > 0 {
                out.raw("}")
                return
            }
        }
        out.raw(#","currentDocument":{"exists":false}}"#)
    }

    /// Decodes a typed value from parsed JSON (as produced by JSONSerialization) into
    /// plain JSON objects; used to read documents back.
    public static func plain(_ typed: Any) -> Any? {
        guard let object = typed as? [String: Any], let (key, value) = object.first, object.count == 1 else { return nil }
        switch key {
        case "nullValue": return NSNull()
        case "booleanValue": return value as? Bool
        case "integerValue":
            if let s = value as? String { return Int64(s) }
            return (value as? NSNumber)?.int64Value
        case "doubleValue":
            if let s = value as? String {
                switch s {
                case "NaN": return Double.nan
                case "Infinity": return Double.infinity
                case "-Infinity": return -Double.infinity
                default: return nil
                }
            }
            return (value as? NSNumber)?.doubleValue
        case "stringValue": return value as? String
        case "arrayValue":
            let values = (value as? [String: Any])?["values"] as? [Any] ?? []
            let decoded = values.map(plain)
            return decoded.contains { $0 == nil } ? nil : decoded.map { $0! }
        case "mapValue":
            let fields = (value as? [String: Any])?["fields"] as? [String: Any] ?? [:]
            var out: [String: Any] = [:]
            for (k, v) in fields {
                guard let d = plain(v) else { return nil }
                out[k] = d
            }
            return out
        default: return nil
        }
    }
}
