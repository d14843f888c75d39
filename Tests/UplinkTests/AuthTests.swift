import Foundation
import Logging
import Recording
import Testing
import TestSupport
import UpstreamFixtures
@testable import Uplink

/// A fresh RSA key made by openssl, as PEM text, plus its public key file.
func opensslKey(in dir: String, traditional: Bool = false) throws -> (pem: String, publicKeyPath: String) {
    let key = "\(dir)/key.pem", pub = "\(dir)/pub.pem"
    let gen = traditional ? try run("/usr/bin/openssl", ["genrsa", "-traditional", "-out", key, "2048"])
        : try run("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
    guard gen.status == 0 else { throw FixtureError(description: "openssl key generation failed: \(gen.output)") }
    let out = try run("/usr/bin/openssl", ["pkey", "-in", key, "-pubout", "-out", pub])
    guard out.status == 0 else { throw FixtureError(description: "openssl pkey failed: \(out.output)") }
    return (try String(contentsOfFile: key, encoding: .utf8), pub)
}

func base64URLDecode(_ s: Substring) -> Data? {
    var b = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while b.count % 4 != 0 { b += "=" }
    return Data(base64Encoded: b)
}

@Suite("Auth")
struct AuthTests {
    @Test("RS256 JWTs verify with openssl (PKCS#8 and PKCS#1 keys); a tampered token does not", arguments: [false, true])
    func jwtVerifiesWithOpenSSL(traditional: Bool) throws {
        let dir = temporaryDirectory("jwt")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (pem, pub) = try opensslKey(in: dir, traditional: traditional)
        let signer = try JWTSigner(privateKeyPEM: pem, keyID: "k-123")
        let claims = JWTSigner.grantClaims(issuer: "gw@demo.iam.gserviceaccount.com", scope: GoogleTokenProvider.datastoreScope,
                                           audience: "https://oauth2.googleapis.com/token", issuedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let token = try signer.sign(claimsJSON: claims)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        let headerData = try #require(base64URLDecode(parts[0]))
        let bodyData = try #require(base64URLDecode(parts[1]))
        let header = try #require(try JSONSerialization.jsonObject(with: headerData) as? [String: Any])
        #expect(header["alg"] as? String == "RS256" && header["typ"] as? String == "JWT" && header["kid"] as? String == "k-123")
        let body = try #require(try JSONSerialization.jsonObject(with: bodyData) as? [String: Any])
        #expect(body["iss"] as? String == "gw@demo.iam.gserviceaccount.com")
        #expect(body["aud"] as? String == "https://oauth2.googleapis.com/token")
        #expect(body["scope"] as? String == "https://www.googleapis.com/auth/datastore")
        #expect((body["iat"] as? NSNumber)?.int64Value == 1_800_000_000 && (body["exp"] as? NSNumber)?.int64Value == 1_800_003_600)
        try Data("\(parts[0]).\(parts[1])".utf8).write(to: URL(fileURLWithPath: "\(dir)/input"))
        try #require(base64URLDecode(parts[2])).write(to: URL(fileURLWithPath: "\(dir)/sig"))
        let ok = try run("/usr/bin/openssl", ["dgst", "-sha256", "-verify", pub, "-signature", "\(dir)/sig", "\(dir)/input"])
        #expect(ok.status == 0 && ok.output.contains("Verified OK"), "\(ok.output)")
        try Data("\(parts[0]).\(parts[1])x".utf8).write(to: URL(fileURLWithPath: "\(dir)/input"))
        let bad = try run("/usr/bin/openssl", ["dgst", "-sha256", "-verify", pub, "-signature", "\(dir)/sig", "\(dir)/input"])
        #expect(bad.status != 0)
    }

    @Test("broken keys give clear errors without key material")
    func badKeys() throws {
        #expect(throws: JWTSigner.KeyError.self) { try JWTSigner(privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", keyID: "") }
        #expect(throws: ServiceAccountKey.Invalid.self) { try ServiceAccountKey(json: Data("{\"type\":\"service_account\"}".utf8)) }
        #expect(throws: ServiceAccountKey.Invalid.self) { try ServiceAccountKey(json: Data("not json".utf8)) }
    }

    @Test("token exchanged once, cached, refreshed early and once more on 401; no secret in logs or errors")
    func tokenFlowAndSecrecy() async throws {
        let dir = temporaryDirectory("auth")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (pem, _) = try opensslKey(in: dir)
        let state = AuthServerState()
        let server = try await TestHTTPServer { request in await state.handle(request) }
        defer { Task { await server.stop() } }
        let keyJSON: [String: Any] = ["type": "service_account", "project_id": "demo", "private_key_id": "kid-1", "private_key": pem,
                                      "client_email": "gw@demo.iam.gserviceaccount.com", "token_uri": "\(server.baseURL)/token"]
        let key = try ServiceAccountKey(json: try JSONSerialization.data(withJSONObject: keyJSON))
        let capture = LogCapture()
        let now = MutableDate(Date())
        let sink = try FirestoreSink(configuration: FirestoreConfiguration(projectID: "demo", baseURL: server.baseURL, auth: .serviceAccount(key)),
                                     logger: capture.logger(), now: { now.value })
        let doc = SinkDocument.realtimeData(RealtimeDataDocument(name: "DOC-1", sessionID: "S", board: "B", seq: 0, points: []))
        // First commit: token 1 is refused with 401, token 2 works.
        await state.setRefuseFirstToken(true)
        try await sink.write([doc])
        #expect(await state.exchanges == 2)
        #expect(await state.commitTokens == ["Bearer ya29.SECRET-1", "Bearer ya29.SECRET-2"])
        // Cached.
        try await sink.write([doc])
        #expect(await state.exchanges == 2)
        // Refreshed when under 5 minutes remain.
        now.value = now.value.addingTimeInterval(3600 - 200)
        try await sink.write([doc])
        #expect(await state.exchanges == 3)
        // A refused grant: the error names the OAuth error, never the assertion or the key.
        await state.setRefuseGrant(true)
        now.value = now.value.addingTimeInterval(7200)
        var failure: SinkError?
        do { try await sink.write([doc]) } catch { failure = error }
        let error = try #require(failure)
        #expect(error.description.contains("invalid_grant"))
        if case .transient = error {} else { Issue.record("a refused grant must pause, not dead-letter: \(error)") }

        let assertions = await state.assertions
        #expect(assertions.count == 4)
        let keyBody = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        var texts = [capture.text, error.description, "\(key)", String(reflecting: key), "\(error)"]
        var dumped = ""
        dump(key, to: &dumped)
        texts.append(dumped)
        let token = AccessToken("ya29.SECRET-9", expiresAt: Date())
        texts += ["\(token)", String(reflecting: token)]
        for text in texts {
            #expect(!text.contains("SECRET"), "token leaked: \(text.prefix(200))")
            for line in keyBody { #expect(!text.contains(line), "private key leaked") }
            for a in assertions { #expect(!text.contains(a), "assertion leaked") }
        }
        #expect(!capture.text.isEmpty)
    }

    @Test("Firestore answers are classed by error.status, not the HTTP code")
    func classification() async throws {
        let answers: [(Int, String, [(String, String)], String)] = [
            (409, "ALREADY_EXISTS", [], "ok"),
            (409, "ABORTED", [], "transient"),
            (429, "RESOURCE_EXHAUSTED", [("Retry-After", "7")], "rate:7"),
            (503, "UNAVAILABLE", [], "transient"),
            (400, "INVALID_ARGUMENT", [], "permanent"),
            (403, "PERMISSION_DENIED", [], "permanent"),
            (429, "RESOURCE_EXHAUSTED:gRPC message exceeds maximum size 4194304", [], "permanent"),
        ]
        for (code, status, headers, expected) in answers {
            let parts = status.split(separator: ":", maxSplits: 1)
            let server = try await TestHTTPServer { _ in
                .reply(status: code, headers: headers + [("Content-Type", "application/json")],
                       body: #"{"error":{"code":\#(code),"message":"\#(parts.count > 1 ? String(parts[1]) : "x")","status":"\#(parts[0])"}}"#)
            }
            let sink = try FirestoreSink(configuration: FirestoreConfiguration(projectID: "demo", baseURL: server.baseURL, auth: .emulator))
            let doc = SinkDocument.realtimeData(RealtimeDataDocument(name: "D", sessionID: "S", board: "B", seq: 0, points: []))
            var outcome = "ok"
            do { try await sink.write([doc]) } catch {
                switch error {
                case .transient: outcome = "transient"
                case let .rateLimited(_, after): outcome = "rate" + (after.map { ":\(Int($0))" } ?? "")
                case .permanent: outcome = "permanent"
                }
            }
            #expect(outcome == expected, "\(code) \(status)")
            await server.stop()
        }
    }
}

final class MutableDate: @unchecked Sendable {
    private let lock = NSLock()
    private var v: Date
    init(_ d: Date) { v = d }
    var value: Date {
        get { lock.withLock { v } }
        set { lock.withLock { v = newValue } }
    }
}

actor AuthServerState {
    var exchanges = 0
    var assertions: [String] = []
    var commitTokens: [String] = []
    var refuseFirstToken = false
    var refuseGrant = false
    func setRefuseFirstToken(_ v: Bool) { refuseFirstToken = v }
    func setRefuseGrant(_ v: Bool) { refuseGrant = v }

    func handle(_ r: TestRequest) -> TestResponse {
        if r.uri.hasPrefix("/token") {
            let form = Dictionary(r.body.split(separator: "&").map { kv -> (String, String) in
                let p = kv.split(separator: "=", maxSplits: 1)
                return (String(p[0]), p.count > 1 ? String(p[1]) : "")
            }, uniquingKeysWith: { a, _ in a })
            guard form["grant_type"] == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer", let assertion = form["assertion"] else {
                return .reply(status: 400, headers: [], body: #"{"error":"unsupported_grant_type"}"#)
            }
            assertions.append(assertion)
            if refuseGrant {
                // A hostile endpoint echoing the assertion must not get it into our errors.
                return .reply(status: 400, headers: [], body: #"{"error":"invalid_grant","error_description":"Invalid JWT Signature.","echo":"\#(assertion)"}"#)
            }
            exchanges += 1
            return .reply(status: 200, headers: [("Content-Type", "application/json")],
                          body: #"{"access_token":"ya29.SECRET-\#(exchanges)","expires_in":3599,"token_type":"Bearer"}"#)
        }
        let auth = r.header("Authorization") ?? ""
        commitTokens.append(auth)
        if refuseFirstToken, auth == "Bearer ya29.SECRET-1" {
            return .reply(status: 401, headers: [], body: #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#)
        }
        return .reply(status: 200, headers: [], body: #"{"writeResults":[{}],"commitTime":"2026-01-01T00:00:00Z"}"#)
    }
}
