/// The part of ``GatewaySettings`` that may change while the gateway runs (a reload on
/// SIGHUP): the hazard catalogue, the session mode, the button toggle and streaming between
/// sessions. Boards, streaming, GNSS and the buffer need a restart.
///
/// The daemon's reloader reads them from the configuration file and hands them to the
/// pipeline (``RecordingPipeline/apply(_:)``), which owns what they switch.
public struct LiveSettings: Sendable, Equatable {
    /// Hazard names the survey offers (empty: any name).
    public var hazardCatalogue: [String]
    /// Manual or always-on sessions; switching to `manual` does not end a running session.
    public var sessionMode: GatewaySettings.SessionMode
    /// Whether a press of a board's button starts or stops a session.
    public var buttonTogglesSession: Bool
    /// Whether the boards stream while no session records.
    public var streamBetweenSessions: Bool
    /// Longest a session records, seconds (nil: until stopped); see
    /// ``GatewaySettings/maxSessionDuration``.
    public var maxSessionDuration: Double?

    /// Live settings with these values.
    public init(hazardCatalogue: [String], sessionMode: GatewaySettings.SessionMode, buttonTogglesSession: Bool,
                streamBetweenSessions: Bool, maxSessionDuration: Double? = nil) {
        self.hazardCatalogue = hazardCatalogue
        self.sessionMode = sessionMode
        self.buttonTogglesSession = buttonTogglesSession
        self.streamBetweenSessions = streamBetweenSessions
        self.maxSessionDuration = maxSessionDuration
    }
}

extension GatewaySettings {
    /// The settings a reload may change.
    public var live: LiveSettings {
        get {
            LiveSettings(hazardCatalogue: hazardCatalogue, sessionMode: sessionMode, buttonTogglesSession: buttonTogglesSession,
                         streamBetweenSessions: streamBetweenSessions, maxSessionDuration: maxSessionDuration)
        }
        set {
            hazardCatalogue = newValue.hazardCatalogue
            sessionMode = newValue.sessionMode
            buttonTogglesSession = newValue.buttonTogglesSession
            streamBetweenSessions = newValue.streamBetweenSessions
            maxSessionDuration = newValue.maxSessionDuration
        }
    }
}
