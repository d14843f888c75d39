import Foundation

/// The directories systemd creates for the unit (`StateDirectory=mwgate` and friends), read
/// from the environment with the packaged defaults when run by hand.
public struct ServicePaths: Sendable, Equatable {
    /// Durable state: the buffer database, the device identity. Default /var/lib/mwgate.
    public var stateDirectory: String
    /// Volatile files (sockets, pid); removed at stop. Default /run/mwgate.
    public var runtimeDirectory: String
    /// Where mwgated.toml lives. Default /etc/mwgate.
    public var configurationDirectory: String

    /// Paths from `STATE_DIRECTORY`, `RUNTIME_DIRECTORY` and `CONFIGURATION_DIRECTORY` (the
    /// first entry when systemd lists several, colon-separated).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        func first(_ name: String, _ fallback: String) -> String {
            guard let value = environment[name], let first = value.split(separator: ":").first, !first.isEmpty else {
                return fallback
            }
            return String(first)
        }
        stateDirectory = first("STATE_DIRECTORY", "/var/lib/mwgate")
        runtimeDirectory = first("RUNTIME_DIRECTORY", "/run/mwgate")
        configurationDirectory = first("CONFIGURATION_DIRECTORY", "/etc/mwgate")
    }

    /// Explicit paths.
    public init(stateDirectory: String, runtimeDirectory: String, configurationDirectory: String) {
        self.stateDirectory = stateDirectory
        self.runtimeDirectory = runtimeDirectory
        self.configurationDirectory = configurationDirectory
    }

    /// `<configuration directory>/mwgated.toml`.
    public var configurationFile: String { configurationDirectory + "/mwgated.toml" }

    /// The buffer database.
    public var bufferDatabase: String { stateDirectory + "/buffer.sqlite" }

    /// FileManager's existence check.
    public static func fileExists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
}
