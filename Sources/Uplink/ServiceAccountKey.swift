import Foundation

/// The fields of a Google service-account key JSON that the gateway uses.
///
/// The private key never appears in `description`, `debugDescription` or a mirror, so
/// logging or dumping a key (or an error holding one) cannot leak it.
public struct ServiceAccountKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Why a key file was refused.
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    public var clientEmail: String
    public var privateKeyID: String
    /// PEM text of the RSA private key (PKCS#8 or PKCS#1).
    let privateKeyPEM: String
    /// OAuth token endpoint (`token_uri`), default `https://oauth2.googleapis.com/token`.
    public var tokenURI: String
    public var projectID: String?

    /// A key from its parts.
    public init(clientEmail: String, privateKeyID: String, privateKeyPEM: String,
                tokenURI: String = "https://oauth2.googleapis.com/token", projectID: String? = nil) {
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.tokenURI = tokenURI
        self.projectID = projectID
    }

    /// Parses the JSON downloaded from the Cloud console (`type: service_account`).
    public init(json: Data) throws(Invalid) {
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            throw Invalid(description: "service-account key is not a JSON object")
        }
        if let type = object["type"] as? String, type != "service_account" {
            throw Invalid(description: "service-account key has type \"\(type)\", expected \"service_account\"")
        }
        guard let email = object["client_email"] as? String, !email.isEmpty else {
            throw Invalid(description: "service-account key has no client_email")
        }
        guard let pem = object["private_key"] as? String, pem.contains("PRIVATE KEY") else {
            throw Invalid(description: "service-account key has no PEM private_key")
        }
        self.init(clientEmail: email, privateKeyID: object["private_key_id"] as? String ?? "", privateKeyPEM: pem,
                  tokenURI: object["token_uri"] as? String ?? "https://oauth2.googleapis.com/token",
                  projectID: object["project_id"] as? String)
    }

    /// Reads and parses a key file.
    public init(contentsOfFile path: String) throws(Invalid) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Invalid(description: "cannot read service-account key file \(path)")
        }
        try self.init(json: data)
    }

    public var description: String { "ServiceAccountKey(\(clientEmail), key id \(privateKeyID), private key redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["clientEmail": clientEmail, "privateKeyID": privateKeyID, "privateKey": "<redacted>",
                                "tokenURI": tokenURI])
    }
}

/// A bearer token that never prints itself.
public struct AccessToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let value: String
    /// When it stops being accepted (our clock).
    public var expiresAt: Date

    /// A token valid until `expiresAt`.
    public init(_ value: String, expiresAt: Date) {
        self.value = value
        self.expiresAt = expiresAt
    }

    /// The `Authorization` header value.
    var authorizationHeader: String { "Bearer \(value)" }

    public var description: String { "AccessToken(redacted, expires \(expiresAt))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["value": "<redacted>", "expiresAt": expiresAt]) }
}
