#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The JSON coding every payload uses: camelCase keys as in the Swift types, sorted, compact.
public enum ControlJSON {
    /// Encodes `value` to a JSON string.
    public static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Decodes a JSON string produced by ``encode(_:)``.
    public static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        let decoder = JSONDecoder()
        return try decoder.decode(type, from: Data(text.utf8))
    }
}
