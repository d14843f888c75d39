import BlueZ
import Gateway
import GatewayConfig
import Logging
import MetaWear

extension GatewaySettings {
    /// The settings a configuration file describes. `busAddress` overrides the system bus
    /// (nil: the system bus, honouring `DBUS_SYSTEM_BUS_ADDRESS`). Throws with a message naming
    /// the value that cannot be used (the loader has already checked everything it can).
    public init(configuration: GatewayConfiguration, busAddress: String? = nil) throws(GatewaySettingsError) {
        let selection: BoardSelection
        switch configuration.boards.selection {
        case .fixed(let texts):
            var addresses: [BluetoothAddress] = []
            for text in texts {
                guard let address = BluetoothAddress(text) else { throw GatewaySettingsError("boards.addresses: '\(text)' is not a Bluetooth address") }
                addresses.append(address)
            }
            selection = .addresses(addresses)
        case .discover(let allow):
            var allowed: Set<BluetoothAddress> = []
            for text in allow {
                guard let address = BluetoothAddress(text) else { throw GatewaySettingsError("boards.allow: '\(text)' is not a Bluetooth address") }
                allowed.insert(address)
            }
            selection = .discovery(allowList: allowed.isEmpty ? nil : allowed, namePrefix: nil)
        }
        let streaming: StreamingConfiguration
        do { streaming = try configuration.boards.streaming() } catch {
            throw GatewaySettingsError("boards: \(error)")
        }
        self.init(
            boards: selection, streaming: streaming, gnss: configuration.gnss.source,
            stateDirectory: configuration.paths.stateDirectory, busAddress: busAddress,
            budget: BufferBudget(maxBytes: configuration.buffer.budget.maxBytes,
                                 minFreeBytes: configuration.buffer.budget.minFreeBytes,
                                 retentionDays: configuration.buffer.retentionDays))
        live = LiveSettings(configuration)
        acceptDeadReckoning = configuration.gnss.acceptDeadReckoning
        backfill = configuration.boards.backfill
        notificationDelivery = NotificationDelivery(configuration.boards.notifications)
        try validate()
    }
}

extension NotificationDelivery {
    /// The configuration's notification path.
    public init(_ notifications: GatewayConfiguration.Boards.Notifications) {
        switch notifications {
        case .acquire: self = .automatic
        case .startNotify: self = .propertiesChanged
        case .keptSession: self = .sessionKeptOverDrops
        }
    }
}

extension LiveSettings {
    /// The live settings a configuration file describes (read again on every reload).
    public init(_ configuration: GatewayConfiguration) {
        self.init(hazardCatalogue: configuration.hazards.names, sessionMode: GatewaySettings.SessionMode(configuration.session.mode),
                  buttonTogglesSession: configuration.session.buttonToggles,
                  streamBetweenSessions: configuration.session.streamBetweenSessions,
                  maxSessionDuration: configuration.session.maxDuration)
    }
}

extension GatewaySettings.SessionMode {
    /// The configuration's session mode.
    public init(_ mode: GatewayConfiguration.Session.Mode) {
        switch mode {
        case .manual: self = .manual
        case .always: self = .always
        }
    }
}

extension Logger.Level {
    /// The configuration's log level.
    public init(_ level: GatewayConfiguration.Log.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}
