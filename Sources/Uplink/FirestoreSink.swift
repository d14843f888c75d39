import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Where and how to reach Firestore.
public struct FirestoreConfiguration: Sendable {
    /// How requests are authorised.
    public enum Auth: Sendable {
        /// A service-account key: RS256 JWT exchanged for an access token.
        case serviceAccount(ServiceAccountKey)
        /// The local emulator: `Authorization: Bearer owner` (what Google's clients send).
        case emulator
    }

    public var projectID: String
    public var databaseID: String
    /// `https://firestore.googleapis.com`, or `http://HOST:PORT` for the emulator.
    public var baseURL: String
    public var auth: Auth
    /// Per-request deadline, seconds.
    public var requestTimeout: Double
    /// Commits larger than this (JSON bytes) are split into one commit per document. The
    /// emulator refuses requests over 4 MiB; production allows 10 MiB.
    public var maxCommitBytes: Int

    /// A configuration; see the properties.
    public init(projectID: String, databaseID: String = "(default)", baseURL: String = "https://firestore.googleapis.com",
                auth: Auth, requestTimeout: Double = 60, maxCommitBytes: Int = 3_800_000) {
        self.projectID = projectID
        self.databaseID = databaseID
        self.baseURL = baseURL
        self.auth = auth
        self.requestTimeout = requestTimeout
        self.maxCommitBytes = maxCommitBytes
    }

    /// The emulator at `host` ("127.0.0.1:8080").
    public static func emulator(host: String, projectID: String) -> Self {
        Self(projectID: projectID, baseURL: "http://\(host)", auth: .emulator)
    }

    /// The emulator when `FIRESTORE_EMULATOR_HOST` is set (Google's convention), else
    /// production with `serviceAccount`; nil when neither is available.
    public static func fromEnvironment(projectID: String, serviceAccount: ServiceAccountKey?,
                                       environment: [String: String] = ProcessInfo.processInfo.environment) -> Self? {
        if let host = environment["FIRESTORE_EMULATOR_HOST"], !host.isEmpty { return .emulator(host: host, projectID: projectID) }
        guard let serviceAccount else { return nil }
        return Self(projectID: projectID, auth: .serviceAccount(serviceAccount))
    }

    /// `projects/{p}/databases/{d}`.
    public var databasePath: String { "projects/\(projectID)/databases/\(databaseID)" }
}

/// Writes documents with Firestore REST v1 `documents:commit`: one commit per batch, each
/// document created only if absent; ALREADY_EXISTS (read from `error.status`, since
/// ABORTED is also HTTP 409) on a replay counts as stored.
public struct FirestoreSink: Sink {
    public var name: String { "firestore" }
    public let configuration: FirestoreConfiguration
    private let tokens: GoogleTokenProvider?
    private let httpClient: HTTPClient
    private let logger: Logger
    private let prepared = EncodingCache()

    /// A sink for `configuration`. A service-account key is checked (parsed and loaded)
    /// here, so a broken key fails at startup.
    public init(configuration: FirestoreConfiguration, httpClient: HTTPClient = .uplink,
                logger: Logger = Logger(label: "mwgate.uplink.firestore"),
                now: @escaping @Sendable () -> Date = { Date() }) throws(JWTSigner.KeyError) {
        self.configuration = configuration
        self.httpClient = httpClient
        self.logger = logger
        switch configuration.auth {
        case let .serviceAccount(key):
            tokens = try GoogleTokenProvider(key: key, httpClient: httpClient, logger: logger, now: now)
        case .emulator:
            tokens = nil
        }
    }

    /// The token provider (service-account mode), for status and tests.
    public var tokenProvider: GoogleTokenProvider? { tokens }

    public func write(_ documents: [SinkDocument]) async throws(SinkError) {
        guard !documents.isEmpty else { return }
        for doc in documents where doc.firestoreSize > 1_048_576 {
            throw .permanent(reason: "\(doc.collection)/\(doc.name) is \(doc.firestoreSize) bytes, over Firestore's 1 MiB document limit")
        }
        let body = FirestoreEncoding.commitBodyBytes(documents, databasePath: configuration.databasePath,
                                                     encoded: prepared.take)
        if documents.count > 1, body.count > configuration.maxCommitBytes {
            for doc in documents { try await write([doc]) }
            return
        }
        switch try await commit(body, documents: documents) {
        case .stored: return
        case .alreadyExists:
            // A commit is atomic: with one document the 409 proves it landed before. With
            // several, an earlier attempt may have held only some of them, so each is
            // written on its own.
            if documents.count > 1 {
                for doc in documents { try await write([doc]) }
            }
        }
    }

    public func close() async {}

    /// Encodes the next documents' writes ahead (typed JSON is most of our CPU per commit).
    public func prepare(_ documents: [SinkDocument]) async {
        for doc in documents where doc.firestoreSize <= 1_048_576 && !doc.replacesStored {
            prepared.put(doc.name, FirestoreEncoding.writeBytes(doc, databasePath: configuration.databasePath))
        }
    }

    enum CommitOutcome { case stored, alreadyExists }

    private func commit(_ body: [UInt8], documents: [SinkDocument]) async throws(SinkError) -> CommitOutcome {
        var refreshed = false
        while true {
            var request = HTTPClientRequest(url: "\(configuration.baseURL)/v1/\(configuration.databasePath)/documents:commit")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            if let tokens {
                request.headers.add(name: "Authorization", value: try await tokens.token().authorizationHeader)
            } else {
                request.headers.add(name: "Authorization", value: "Bearer owner")
            }
            request.body = .bytes(ByteBuffer(bytes: body))
            let status: UInt
            let headers: HTTPHeaders
            let responseBody: ByteBuffer
            do {
                let response = try await httpClient.execute(request, timeout: .milliseconds(Int64(configuration.requestTimeout * 1000)))
                status = response.status.code
                headers = response.headers
                responseBody = try await response.body.collect(upTo: 4 << 20)
            } catch {
                throw .transient(reason: "commit of \(documents.count) document(s) got no answer: \(HTTPErrorText.describe(error))",
                                 retryAfter: nil)
            }
            if (200..<300).contains(status) {
                logger.trace("committed", metadata: ["documents": "\(documents.count)", "bytes": "\(body.count)"])
                return .stored
            }
            let error = FirestoreError(status: status, body: responseBody)
            let retryAfter = headers.first(name: "Retry-After").flatMap(RetryAfter.seconds)
            switch error.status {
            case "ALREADY_EXISTS":
                return .alreadyExists
            case "UNAUTHENTICATED" where tokens != nil && !refreshed, _ where status == 401 && tokens != nil && !refreshed:
                refreshed = true
                await tokens?.invalidate()
                logger.info("commit unauthenticated; refreshing the access token once")
                continue
            default:
                throw Self.classify(error, retryAfter: retryAfter, documents: documents)
            }
        }
    }

    static func classify(_ error: FirestoreError, retryAfter: Double?, documents: [SinkDocument]) -> SinkError {
        let what = documents.count == 1 ? "\(documents[0].collection)/\(documents[0].name)" : "commit of \(documents.count) documents"
        let reason = "\(what): HTTP \(error.httpStatus) \(error.status ?? "")\(error.message.map { ": \($0)" } ?? "")"
        switch error.status {
        case "RESOURCE_EXHAUSTED":
            // A request too large fails the same way every time.
            if let m = error.message, m.contains("exceeds maximum size") || m.contains("too large") { return .permanent(reason: reason) }
            return .rateLimited(reason: reason, retryAfter: retryAfter)
        case "UNAVAILABLE", "ABORTED", "DEADLINE_EXCEEDED", "INTERNAL", "UNKNOWN", "CANCELLED", "UNAUTHENTICATED":
            return .transient(reason: reason, retryAfter: retryAfter)
        case "INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND", "FAILED_PRECONDITION", "UNIMPLEMENTED", "OUT_OF_RANGE":
            return .permanent(reason: reason)
        default:
            if error.httpStatus == 429 { return .rateLimited(reason: reason, retryAfter: retryAfter) }
            if error.httpStatus >= 500 || error.httpStatus == 408 || error.httpStatus == 401 {
                return .transient(reason: reason, retryAfter: retryAfter)
            }
            return .permanent(reason: reason)
        }
    }
}

/// The `{"error": {code, message, status}}` body of a failed Firestore call.
struct FirestoreError {
    var httpStatus: UInt
    var status: String?
    var message: String?

    init(status: UInt, body: ByteBuffer) {
        httpStatus = status
        let object = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        self.status = error?["status"] as? String
        message = (error?["message"] as? String).map { String($0.prefix(300)) }
    }
}

/// Parses `Retry-After`: delta seconds or an HTTP date.
public enum RetryAfter {
    /// Seconds to wait, nil when unparseable; an HTTP date is measured from `now`.
    public static func seconds(_ value: String) -> Double? { seconds(value, now: Date()) }

    /// Seconds to wait from `now`.
    public static func seconds(_ value: String, now: Date) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let s = Double(trimmed), s.isFinite, s >= 0 { return s }
        guard let date = httpDate(trimmed) else { return nil }
        return max(0, date - now.timeIntervalSince1970)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 5.6.7) as seconds since the
    /// epoch. Parsed by hand with `timegm` rather than with a `DateFormatter`, which would
    /// load ICU's locale, calendar and zone data into the daemon on the first 429 or 503.
    static func httpDate(_ text: String) -> Double? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT" || parts[5] == "UTC",
              let day = Int32(parts[1]), (1...31).contains(day),
              let month = months.firstIndex(of: String(parts[2])),
              let year = Int32(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int32(clock[0]), let minute = Int32(clock[1]), let second = Int32(clock[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = Int32(month)
        fields.tm_mday = day
        fields.tm_hour = hour
        fields.tm_min = minute
        fields.tm_sec = second
        let seconds = timegm(&fields)
        return seconds == -1 ? nil : Double(seconds)
    }
}
