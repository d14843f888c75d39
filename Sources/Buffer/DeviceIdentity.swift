import Foundation

/// The gateway's device UUID: created once, kept in the state directory, used as `user_id`.
public enum DeviceIdentity {
    /// File name inside the state directory.
    public static let fileName = "device-id"

    /// Why the identity could not be read or created.
    public struct IdentityError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads the device UUID, creating it (atomically) on first use.
    public static func loadOrCreate(stateDirectory: String) throws(IdentityError) -> String {
        let url = URL(fileURLWithPath: stateDirectory).appendingPathComponent(fileName)
        if let text = try? String(contentsOf: url, encoding: .utf8) {
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard UUID(uuidString: id) != nil else {
                throw IdentityError(description: "\(url.path) does not hold a UUID: \"\(id.prefix(60))\"")
            }
            return id.uppercased()
        }
        let id = UUID().uuidString
        do {
            try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
            try Data((id + "\n").utf8).write(to: url, options: .atomic)
        } catch {
            throw IdentityError(description: "cannot create \(url.path): \(error.localizedDescription)")
        }
        return id
    }
}
