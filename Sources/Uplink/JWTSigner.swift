import Basics
import Crypto
import Foundation
import _CryptoExtras

/// Builds RS256-signed JSON Web Tokens (RFC 7515 compact form) with an RSA private key.
public struct JWTSigner: Sendable {
    /// Why a key could not be used.
    public struct KeyError: Error, CustomStringConvertible {
        public var description: String
    }

    private let key: _RSA.Signing.PrivateKey
    /// `kid` header value.
    public let keyID: String

    /// A signer for a PEM RSA private key (PKCS#8 `BEGIN PRIVATE KEY` or PKCS#1).
    public init(privateKeyPEM: String, keyID: String) throws(KeyError) {
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            // The underlying error could quote key material; name only the problem.
            throw KeyError(description: "the private key is not a valid PEM RSA key")
        }
        guard key.keySizeInBits >= 2048 else {
            throw KeyError(description: "the RSA key has \(key.keySizeInBits) bits; at least 2048 are required")
        }
        self.keyID = keyID
    }

    /// A signer for a service account's key.
    public init(serviceAccount: ServiceAccountKey) throws(KeyError) {
        try self.init(privateKeyPEM: serviceAccount.privateKeyPEM, keyID: serviceAccount.privateKeyID)
    }

    /// `base64url(header).base64url(claims).base64url(signature)` with header
    /// `{"alg":"RS256","typ":"JWT","kid":…}`. `claims` must be a JSON object's text.
    public func sign(claimsJSON: String) throws(KeyError) -> String {
        var header = #"{"alg":"RS256","typ":"JWT""#
        if !keyID.isEmpty {
            header += #","kid":"#
            JSONString.append(keyID, to: &header)
        }
        header += "}"
        let signingInput = Self.base64URL(Data(header.utf8)) + "." + Self.base64URL(Data(claimsJSON.utf8))
        let signature: _RSA.Signing.RSASignature
        do {
            signature = try key.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        } catch {
            throw KeyError(description: "RSA signing failed")
        }
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// The claims of a Google OAuth JWT-bearer grant (iss, scope, aud, iat, exp = iat + 3600).
    public static func grantClaims(issuer: String, scope: String, audience: String, issuedAt: Date) -> String {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        var out = #"{"iss":"#
        JSONString.append(issuer, to: &out)
        out += #","scope":"#
        JSONString.append(scope, to: &out)
        out += #","aud":"#
        JSONString.append(audience, to: &out)
        out += #","iat":\#(iat),"exp":\#(iat + 3600)}"#
        return out
    }

    /// Base64 with the URL alphabet and no padding.
    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
