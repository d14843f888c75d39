import ArgumentParser
import Basics
import ControlAPI
import DBus
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Connects to the daemon and turns every failure into one line naming the problem and
/// the fix, with the documented exit code.
enum DaemonAccess {
    /// Runs `body` with a client on the system bus.
    static func run<T>(_ body: (GatewayControlClient) async throws -> T) async throws -> T {
        let client: GatewayControlClient
        do { client = try await GatewayControlClient.systemBus() } catch {
            let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
            throw MWCtlExit.fail("cannot connect to the system bus at \(address): \(describe(error)); is dbus running?",
                                 MWCtlExit.unreachable)
        }
        defer { client.connection.close() }
        do { return try await body(client) } catch let error as ExitCode { throw error } catch {
            throw exit(for: error)
        }
    }

    /// The exit code (after printing the one-line message) for a failed call.
    static func exit(for error: any Error) -> ExitCode {
        guard let error = error as? DBusError else {
            return MWCtlExit.fail("unexpected answer from the daemon: \(describe(error)) (is mwctl the same version as mwgated?)",
                                  MWCtlExit.failed)
        }
        let E = GatewayControl.ErrorName.self
        switch error.name {
        case DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner:
            return MWCtlExit.fail("the mwgate daemon is not running (\(GatewayControl.busName) has no owner on the system bus); start it with: sudo systemctl start mwgated",
                                  MWCtlExit.unreachable)
        case DBusError.Name.noReply, DBusError.Name.timeout, DBusError.Name.disconnected:
            return MWCtlExit.fail("the mwgate daemon did not answer (\(error.message)); check it with: systemctl status mwgated",
                                  MWCtlExit.unreachable)
        case DBusError.Name.accessDenied:
            return MWCtlExit.fail("permission denied talking to \(GatewayControl.busName); run as root or join the mwgate group: sudo usermod -aG mwgate $USER (then log in again)",
                                  MWCtlExit.permission)
        case E.unknownSession:
            return MWCtlExit.fail("\(error.message); list sessions with: mwctl session list", MWCtlExit.notFound)
        case E.invalidArgument, DBusError.Name.invalidArgs:
            return MWCtlExit.fail(error.message, MWCtlExit.usage)
        case E.notRecording, E.alreadyRecording, E.notAwaitingSurvey, E.unknownBoard, E.shuttingDown:
            return MWCtlExit.fail(error.message, MWCtlExit.refused)
        case E.syncNotConfigured:
            return MWCtlExit.fail("\(error.message); configure an upstream in /etc/mwgate/mwgate.toml", MWCtlExit.syncNotConfigured)
        case DBusError.Name.unknownMethod, DBusError.Name.unknownObject, DBusError.Name.unknownInterface:
            return MWCtlExit.fail("the daemon does not offer this command (\(error.message)); update mwgated to the version of mwctl",
                                  MWCtlExit.failed)
        default:
            return MWCtlExit.fail(error.message.isEmpty ? error.name : error.message, MWCtlExit.failed)
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DBusError { return error.message.isEmpty ? error.name : error.message }
        return "\(error)"
    }
}

/// Small text helpers for the human output.
enum Format {
    static func bytes(_ value: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var amount = Double(value)
        var unit = 0
        while amount >= 1024, unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        return unit == 0 ? "\(value) B" : FixedDecimal.string(amount, places: 1) + " " + units[unit]
    }

    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return FixedDecimal.string(seconds, places: 0) + " s" }
        if seconds < 3600 { return FixedDecimal.string(seconds / 60, places: 0) + " min" }
        if seconds < 86_400 { return FixedDecimal.string(seconds / 3600, places: 1) + " h" }
        return FixedDecimal.string(seconds / 86_400, places: 1) + " d"
    }

    /// `2026-11-27 18:40:05` in this machine's time zone (TZ, else /etc/localtime).
    static func time(_ epoch: Double) -> String { localTime(epoch, "%Y-%m-%d %H:%M:%S") }

    /// The local day of `epoch`, `2026-11-27`.
    static func day(_ epoch: Double) -> String { localTime(epoch, "%Y-%m-%d") }

    /// `epoch` (seconds) in the C library's local time, formatted by strftime: the time zone
    /// database is read by the C library, not by ICU through Foundation's `DateFormatter`.
    private static func localTime(_ epoch: Double, _ format: String) -> String {
        var seconds = time_t(epoch.rounded(.down))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return String(epoch) }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, format, &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}


extension String {
    /// The text padded with spaces to `width` characters (on the left with `left`).
    func padded(_ width: Int, left: Bool = false) -> String {
        let fill = String(repeating: " ", count: Swift.max(0, width - count))
        return left ? fill + self : self + fill
    }
}
