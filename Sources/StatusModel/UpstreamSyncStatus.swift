/// The upstream sync as the control API reports it (`sync` in ``GatewayStatus``, and the
/// whole answer of `SyncStatus`), projected from the sync service's own status by the daemon.
public struct UpstreamSyncStatus: Codable, Sendable, Equatable {
    /// False when the gateway runs without an upstream (buffer only).
    public var configured: Bool
    /// The upstream's base URL (no credentials).
    public var endpoint: String?
    /// `idle`, `draining`, `backing_off`, `stopped`, `disabled`…
    public var state: String
    /// Whether credentials are present (never the credentials themselves).
    public var credentialsPresent: Bool?
    public var lastSuccessAt: Double?
    public var lastAttemptAt: Double?
    public var lastError: String?
    public var nextAttemptAt: Double?
    public var documentsSent: Int

    /// A sync in `state`; what is not given is unknown or zero.
    public init(configured: Bool, endpoint: String? = nil, state: String, credentialsPresent: Bool? = nil,
                lastSuccessAt: Double? = nil, lastAttemptAt: Double? = nil, lastError: String? = nil,
                nextAttemptAt: Double? = nil, documentsSent: Int = 0) {
        self.configured = configured
        self.endpoint = endpoint
        self.state = state
        self.credentialsPresent = credentialsPresent
        self.lastSuccessAt = lastSuccessAt
        self.lastAttemptAt = lastAttemptAt
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.documentsSent = documentsSent
    }

    /// The answer when no upstream is configured.
    public static let notConfigured = UpstreamSyncStatus(configured: false, state: "disabled")
}
