import Foundation

/// A private `dbus-daemon` configured like Debian's system bus (`/usr/share/dbus-1/system.conf`:
/// owning names and calling methods denied by default) that includes one policy file, so a
/// test sees exactly what our packaged `io.mwgate.Gateway1.conf` allows and nothing more.
///
/// ```swift
/// let bus = try SystemLikeBus(including: policyPath, in: scratchDirectory)
/// defer { bus.stop() }
/// ```
/// Throws ``SystemLikeBusRefused`` (with the daemon's own message) when `dbus-daemon`
/// refuses the configuration, so a test can also check that a broken policy is rejected.
public final class SystemLikeBus: @unchecked Sendable {
    /// The bus address, e.g. `unix:path=/tmp/.../system_bus_socket,guid=...`.
    public let address: String
    /// The listening socket (world-writable, like the real system socket).
    public let socketPath: String
    private let process: ChildProcess

    /// The deny-by-default configuration text: listens on `socketPath`, includes `policyPath`.
    public static func configuration(socketPath: String, including policyPath: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <listen>unix:path=\(socketPath)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <deny own="*"/>
            <deny send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_requested_reply="true" send_type="method_return"/>
            <allow send_requested_reply="true" send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
            <allow receive_type="signal"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
          </policy>
          <include>\(policyPath)</include>
        </busconfig>
        """
    }

    /// Starts the daemon with its configuration and socket in `directory` (which must exist
    /// and be reachable by the users the test runs commands as).
    public init(including policyPath: String, in directory: URL) throws {
        socketPath = directory.appendingPathComponent("system_bus_socket").path
        let configPath = directory.appendingPathComponent("system-like-bus.conf").path
        try Self.configuration(socketPath: socketPath, including: policyPath)
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        let process = try ChildProcess(TestBus.daemonPath, ["--config-file=\(configPath)", "--nofork", "--print-address=1", "--nopidfile"],
                                       environment: ProcessInfo.processInfo.environment)
        let line = process.readLine().trimmingCharacters(in: .whitespacesAndNewlines)
        guard line.hasPrefix("unix:") else {
            // The daemon exits when it refuses its configuration; its reason is on stderr.
            process.terminate(SIGKILL)
            let reason = String(decoding: process.errors.readDataToEndOfFile(), as: UTF8.self)
            throw SystemLikeBusRefused(output: reason.isEmpty ? line : reason)
        }
        self.process = process
        address = line
        // Unprivileged users must be able to connect (the real system socket is 0666 too).
        chmod(socketPath, 0o666)
    }

    deinit { stop() }

    /// Kills the daemon. Idempotent; the caller owns `directory`.
    public func stop() { process.terminate() }
}

/// `dbus-daemon` refused the configuration; `output` is what it said.
public struct SystemLikeBusRefused: Error, CustomStringConvertible {
    public let output: String
    public var description: String { "dbus-daemon refused the configuration: \(output)" }
}
