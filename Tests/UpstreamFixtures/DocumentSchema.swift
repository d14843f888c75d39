import Foundation

/// Minimal JSON Schema (2020-12 subset used by docs/schema: type, required, properties,
/// items, maxItems, oneOf, enum, const, minimum, maximum). Returns the violations.
public func schemaViolations(_ value: Any, _ schema: [String: Any], path: String = "$") -> [String] {
    var out: [String] = []
    func isType(_ v: Any, _ t: String) -> Bool {
        switch t {
        case "null": return v is NSNull
        case "object": return v is [String: Any]
        case "array": return v is [Any]
        case "string": return v is String
        // Values come from FirestoreEncoding.plain: native Bool, Int64, Double, String.
        case "boolean": return v is Bool
        case "integer": return v is Int64
        case "number": return v is Double || v is Int64
        default: return false
        }
    }
    if let t = schema["type"] {
        let types = (t as? [String]) ?? [(t as? String) ?? ""]
        if !types.contains(where: { isType(value, $0) }) { out.append("\(path): expected \(types), got \(type(of: value)) \(value)") }
    }
    // A schema's `true` parses as an NSNumber (printed 1), a document's as a native Bool.
    func canonical(_ v: Any) -> String { type(of: v) == Bool.self ? ((v as? Bool) == true ? "1" : "0") : "\(v)" }
    if let c = schema["const"], canonical(c) != canonical(value) { out.append("\(path): expected const \(c), got \(value)") }
    if let e = schema["enum"] as? [Any], !e.contains(where: { "\($0)" == "\(value)" }) { out.append("\(path): \(value) not in \(e)") }
    let numeric: Double? = (value as? Double) ?? (value as? Int64).map(Double.init)
    if let m = (schema["minimum"] as? NSNumber)?.doubleValue, let v = numeric, v < m { out.append("\(path): \(v) < \(m)") }
    if let m = (schema["maximum"] as? NSNumber)?.doubleValue, let v = numeric, v > m { out.append("\(path): \(v) > \(m)") }
    if let oneOf = schema["oneOf"] as? [[String: Any]] {
        let matches = oneOf.filter { schemaViolations(value, $0, path: path).isEmpty }.count
        if matches != 1 { out.append("\(path): matches \(matches) of oneOf") }
    }
    if let object = value as? [String: Any] {
        for r in (schema["required"] as? [String]) ?? [] where object[r] == nil { out.append("\(path): missing \(r)") }
        let props = (schema["properties"] as? [String: Any]) ?? [:]
        for (k, v) in object {
            if let sub = props[k] as? [String: Any] {
                out += schemaViolations(v, sub, path: "\(path).\(k)")
            } else if !props.isEmpty {
                out.append("\(path): unexpected field \(k)")
            }
        }
    }
    if let array = value as? [Any] {
        if let max = schema["maxItems"] as? Int, array.count > max { out.append("\(path): \(array.count) items > \(max)") }
        if let items = schema["items"] as? [String: Any] {
            for (i, v) in array.enumerated() {
                out += schemaViolations(v, items, path: "\(path)[\(i)]")
                if out.count > 20 { return out }
            }
        }
    }
    return out
}

/// `docs/schema/NAME.schema.json` of the repository at `repositoryRoot`, parsed.
public func loadDocumentSchema(_ name: String, repositoryRoot: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: "\(repositoryRoot)/docs/schema/\(name).schema.json"))
    guard let schema = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw FixtureError(description: "docs/schema/\(name).schema.json is not a JSON object")
    }
    return schema
}
