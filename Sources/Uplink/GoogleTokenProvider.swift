import AsyncHTTPClient
import Foundation
import Logging
import NIOCore

/// Exchanges an RS256 JWT signed with a service-account key for an OAuth access token
/// (the JWT-bearer grant) and caches it until `refreshMargin` before it expires.
///
/// Failures are `SinkError.transient`: a refused grant is usually a clock that is not
/// synchronised yet or a key being rotated, which must pause uploads, not dead-letter data.
public actor GoogleTokenProvider {
    /// OAuth scope for Firestore.
    public static let datastoreScope = "https://www.googleapis.com/auth/datastore"

    private let key: ServiceAccountKey
    private let signer: JWTSigner
    private let scope: String
    private let refreshMargin: Double
    private let now: @Sendable () -> Date
    private let httpClient: HTTPClient
    private let logger: Logger
    private var cached: AccessToken?
    /// Token exchanges done (for status and tests).
    public private(set) var exchanges = 0

    /// A provider for `key`; the token is renewed `refreshMargin` seconds before it expires.
    public init(key: ServiceAccountKey, scope: String = GoogleTokenProvider.datastoreScope, refreshMargin: Double = 300,
                httpClient: HTTPClient = .uplink, logger: Logger = Logger(label: "mwgate.uplink.auth"),
                now: @escaping @Sendable () -> Date = { Date() }) throws(JWTSigner.KeyError) {
        self.key = key
        signer = try JWTSigner(serviceAccount: key)
        self.scope = scope
        self.refreshMargin = refreshMargin
        self.httpClient = httpClient
        self.logger = logger
        self.now = now
    }

    /// A token valid for at least `refreshMargin` more seconds, exchanged if needed.
    public func token() async throws(SinkError) -> AccessToken {
        if let cached, cached.expiresAt.timeIntervalSince(now()) > refreshMargin { return cached }
        let fresh = try await exchange()
        cached = fresh
        return fresh
    }

    /// Drops the cached token (after the upstream answered 401).
    public func invalidate() { cached = nil }

    private func exchange() async throws(SinkError) -> AccessToken {
        let issuedAt = now()
        let assertion: String
        do {
            assertion = try signer.sign(claimsJSON: JWTSigner.grantClaims(
                issuer: key.clientEmail, scope: scope, audience: key.tokenURI, issuedAt: issuedAt))
        } catch {
            throw .permanent(reason: "cannot sign the token request: \(error.description)")
        }
        var request = HTTPClientRequest(url: key.tokenURI)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        exchanges += 1
        let status: UInt
        let body: ByteBuffer
        do {
            let response = try await httpClient.execute(request, timeout: .seconds(30))
            status = response.status.code
            body = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw .transient(reason: "token endpoint unreachable: \(HTTPErrorText.describe(error))", retryAfter: nil)
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
        guard status == 200 else {
            // Only the OAuth error code and description: the body is never echoed.
            let code = object["error"] as? String ?? "HTTP \(status)"
            let detail = (object["error_description"] as? String).map { ": \($0)" } ?? ""
            logger.warning("token exchange refused", metadata: ["status": "\(status)", "error": "\(code)"])
            throw .transient(reason: "token exchange refused (\(code)\(detail)); check the key and that the clock is synchronised",
                             retryAfter: nil)
        }
        guard let value = object["access_token"] as? String, !value.isEmpty else {
            throw .transient(reason: "token endpoint answered without access_token", retryAfter: nil)
        }
        let lifetime = (object["expires_in"] as? NSNumber)?.doubleValue ?? 3600
        logger.debug("access token obtained", metadata: ["expires_in": "\(Int(lifetime))"])
        return AccessToken(value, expiresAt: issuedAt.addingTimeInterval(lifetime))
    }
}

/// Error text for transport failures that never includes request headers or bodies.
enum HTTPErrorText {
    static func describe(_ error: any Error) -> String {
        if let e = error as? HTTPClientError { return "\(e)" }
        return String(describing: error)
    }
}
