import ArgumentParser
import ControlAPI
import DBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StatusModel
#if canImport(Glibc)
import Glibc
#endif

/// `mwctl doctor`: checks what the gateway needs and says how to fix what is wrong.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check Bluetooth, D-Bus access, GPS, clock, disk and upstream; say how to fix problems.",
        discussion: "Exit status 0 when nothing failed (warnings allowed), 1 when a check failed.")

    @OptionGroup var output: OutputOptions

    struct Check: Encodable {
        enum Level: String, Encodable { case ok, warn, fail }
        var name: String
        var level: Level
        var detail: String
        var fix: String?
    }

    func run() async throws {
        var checks: [Check] = []
        var status: GatewayStatus?
        var connection: DBusConnection?
        do { connection = try await DBusConnection.system() } catch {
            checks.append(Check(name: "system bus", level: .fail, detail: "cannot connect: \(DaemonAccess.describe(error))",
                                fix: "start dbus (systemctl start dbus) or check DBUS_SYSTEM_BUS_ADDRESS"))
        }
        if let connection {
            defer { connection.close() }
            checks.append(await bluetoothd(connection))
            checks.append(adapter())
            let (check, fetched) = await daemon(connection)
            checks.append(check)
            status = fetched
        } else {
            checks.append(adapter())
        }
        checks += boardIdentity(status)
        checks += flashLogs(status)
        checks += gnss(status)
        checks.append(clock(status))
        checks.append(disk(status))
        checks.append(upstream(status))

        if output.json {
            try emitJSON(checks)
        } else {
            for c in checks {
                let mark = switch c.level { case .ok: "ok  "; case .warn: "WARN"; case .fail: "FAIL" }
                emitLine("[\(mark)] \(c.name): \(c.detail)")
                if let fix = c.fix, c.level != .ok { emitLine("       fix: \(fix)") }
            }
        }
        if checks.contains(where: { $0.level == .fail }) { throw ExitCode(1) }
    }

    private func bluetoothd(_ connection: DBusConnection) async -> Check {
        do {
            guard try await connection.nameOwner("org.bluez") != nil else {
                return Check(name: "bluetoothd", level: .fail, detail: "org.bluez has no owner on the system bus",
                             fix: "sudo systemctl enable --now bluetooth")
            }
            var detail = "running (org.bluez owned)"
            if let reply = try? await connection.call(destination: "org.bluez", path: "/org/bluez/hci0",
                                                      interface: DBusStandardInterface.properties, member: "Get",
                                                      arguments: [.string("org.bluez.Adapter1"), .string("Powered")],
                                                      timeout: .seconds(5)),
               let value = try? reply.decode(DBusValue.self), case .boolean(let powered) = value.unwrappingVariants {
                guard powered else {
                    return Check(name: "bluetoothd", level: .fail, detail: "running, but adapter hci0 is powered off",
                                 fix: "bluetoothctl power on (and check rfkill list)")
                }
                detail += ", hci0 powered"
            }
            return Check(name: "bluetoothd", level: .ok, detail: detail)
        } catch {
            return Check(name: "bluetoothd", level: .fail, detail: "cannot ask the bus: \(DaemonAccess.describe(error))", fix: nil)
        }
    }

    private func adapter() -> Check {
        switch HCIProbe.probe() {
        case .unavailable(_, let reason):
            return Check(name: "adapter (HCI)", level: .warn, detail: reason,
                         fix: "check the kernel's Bluetooth support (modprobe bluetooth) and the controller (dmesg | grep -i bluetooth)")
        case .adapters(let adapters):
            guard !adapters.isEmpty else {
                return Check(name: "adapter (HCI)", level: .fail, detail: "no Bluetooth controller found",
                             fix: "plug in or enable the controller (rfkill unblock bluetooth)")
            }
            let text = adapters.map { "\($0.name) \($0.address) \($0.up ? "up" : "DOWN")" }.joined(separator: "; ")
            let down = adapters.contains { !$0.up }
            return Check(name: "adapter (HCI)", level: down ? .fail : .ok, detail: text,
                         fix: down ? "bring it up: bluetoothctl power on (or rfkill unblock bluetooth)" : nil)
        }
    }

    private func daemon(_ connection: DBusConnection) async -> (Check, GatewayStatus?) {
        let client = GatewayControlClient(connection: connection, timeout: .seconds(10))
        do {
            let status = try await client.status()
            return (Check(name: "mwgated (D-Bus)", level: .ok, detail: "\(GatewayControl.busName) answers"), status)
        } catch let error as DBusError {
            switch error.name {
            case DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner:
                return (Check(name: "mwgated (D-Bus)", level: .fail, detail: "the daemon is not running",
                              fix: "sudo systemctl start mwgated; then journalctl -u mwgated"), nil)
            case DBusError.Name.accessDenied:
                return (Check(name: "mwgated (D-Bus)", level: .fail, detail: "permission denied",
                              fix: "run as root or join the mwgate group: sudo usermod -aG mwgate $USER"), nil)
            default:
                return (Check(name: "mwgated (D-Bus)", level: .fail, detail: DaemonAccess.describe(error),
                              fix: "systemctl status mwgated"), nil)
            }
        } catch {
            return (Check(name: "mwgated (D-Bus)", level: .fail, detail: "\(error)", fix: "systemctl status mwgated"), nil)
        }
    }

    /// Boards whose model or firmware could not be read: BlueZ hides GATT services its
    /// plugins claim, so Device Information may be missing (reference bluez-dbus.md). The
    /// detail says what is missing, why, and what stood in for it (module info, Modalias).
    private func boardIdentity(_ status: GatewayStatus?) -> [Check] {
        (status?.boards ?? []).compactMap { board in
            board.missingIdentity.map {
                Check(name: "board \(board.address) identity", level: .warn, detail: "\(board.model ?? "model unknown"): \($0)",
                      fix: "recording is not affected; to see model and firmware, let bluetoothd export Device Information: "
                          + "on BlueZ 5.80+ set ExportClaimedServices = read-only under [GATT] in /etc/bluetooth/main.conf "
                          + "(the default), or start bluetoothd with --noplugin=deviceinfo; then reconnect the board")
            }
        }
    }

    /// Each board's flash log (what backfills the link's gaps): its capacity, or why it is off.
    private func flashLogs(_ status: GatewayStatus?) -> [Check] {
        (status?.boards ?? []).compactMap { board in
            board.flashLog.map { flash in
                let failed = flash.hasPrefix("failed")
                return Check(name: "board \(board.address) flash log", level: failed ? .warn : .ok, detail: flash,
                             fix: failed ? "streaming is not affected, but link gaps cannot be filled; reconnect the board, "
                                 + "or reset it if its logger slots are taken by another app" : nil)
            }
        }
    }

    private func gnss(_ status: GatewayStatus?) -> [Check] {
        guard let g = status?.gnss else {
            return [Check(name: "GPS", level: .warn, detail: "unknown (the daemon's status is not available)", fix: nil)]
        }
        guard let source = g.source else {
            return [Check(name: "GPS", level: .warn, detail: "no receiver configured: points get no location",
                          fix: "set [gnss] source = \"serial:/dev/ttyACM0\" (or gpsd:) in /etc/mwgate/mwgate.toml")]
        }
        var checks: [Check] = []
        if source.hasPrefix("serial:") {
            let path = String(source.dropFirst("serial:".count).split(separator: ",").first ?? "")
            if !FileManager.default.fileExists(atPath: path) {
                checks.append(Check(name: "GPS device", level: .fail, detail: "\(path) does not exist",
                                    fix: "plug in the receiver; check dmesg and the udev rule for its name"))
            } else {
                checks.append(Check(name: "GPS device", level: .ok, detail: path))
            }
        }
        if !g.isRunning {
            checks.append(Check(name: "GPS fix", level: .fail, detail: "the source \(source) stopped",
                                fix: "journalctl -u mwgated -g gnss for the reason; check the device and its permissions (dialout group)"))
        } else if g.hasPosition, let age = g.fixAgeSeconds, age < 10 {
            checks.append(Check(name: "GPS fix", level: .ok, detail: "\(g.mode ?? "?") fix, \(g.satellitesUsed.map { "\($0) satellites, " } ?? "")\(Format.duration(age)) old"))
        } else {
            checks.append(Check(name: "GPS fix", level: .warn,
                                detail: g.fixesReceived == 0 ? "no data from \(source) yet" : "no current position (\(g.mode ?? "no_fix"))",
                                fix: "give the antenna a clear view of the sky; a cold start takes up to a few minutes"))
        }
        return checks
    }

    private func clock(_ status: GatewayStatus?) -> Check {
        guard let synced = status?.clock.systemClockSynchronised else {
            return Check(name: "clock", level: .warn, detail: "unknown (the daemon's status is not available)",
                         fix: "timedatectl shows whether NTP synchronised the clock")
        }
        if synced { return Check(name: "clock", level: .ok, detail: "system clock synchronised") }
        let source = status.map { "; point times come from \($0.clock.timeSource)" } ?? ""
        return Check(name: "clock", level: .warn, detail: "system clock not synchronised\(source)",
                     fix: "enable NTP (timedatectl set-ntp true) or chrony with the GNSS receiver as a source")
    }

    private func disk(_ status: GatewayStatus?) -> Check {
        guard let s = status?.storage else {
            return Check(name: "disk", level: .warn, detail: "unknown (the daemon's status is not available)", fix: nil)
        }
        guard let free = s.freeBytes else {
            return Check(name: "disk", level: .warn, detail: "cannot read free space of \(s.stateDirectory)", fix: nil)
        }
        let used = s.bufferBytes ?? 0
        let detail = "\(Format.bytes(free)) free on \(s.stateDirectory); buffer \(Format.bytes(used)) of \(Format.bytes(s.budgetMaxBytes)) budget"
        if free < s.budgetMinFreeBytes {
            return Check(name: "disk", level: .fail, detail: detail + ", below the \(Format.bytes(s.budgetMinFreeBytes)) to keep free",
                         fix: "free space on the card, or lower [buffer] min_free in the configuration; old synced data is evicted first")
        }
        if used > s.budgetMaxBytes * 9 / 10 {
            return Check(name: "disk", level: .warn, detail: detail + ", near the budget",
                         fix: "check the upload (mwctl sync status): unsynced data is evicted only as a last resort")
        }
        return Check(name: "disk", level: .ok, detail: detail)
    }

    private func upstream(_ status: GatewayStatus?) -> Check {
        guard let s = status?.sync else {
            return Check(name: "upstream", level: .warn, detail: "unknown (the daemon's status is not available)", fix: nil)
        }
        guard s.configured else {
            return Check(name: "upstream", level: .warn, detail: "no upstream configured: data stays on the gateway",
                         fix: "configure [upstream] in /etc/mwgate/mwgate.toml")
        }
        if s.credentialsPresent == false {
            return Check(name: "upstream", level: .fail, detail: "credentials missing for \(s.endpoint ?? "the upstream")",
                         fix: "install the credentials file named in [upstream] (mode 0600, owner mwgate)")
        }
        if let error = s.lastError, s.state != "idle" {
            return Check(name: "upstream", level: .fail, detail: "\(s.state): \(error)",
                         fix: "check the network and the endpoint; mwctl sync now retries at once")
        }
        let last = s.lastSuccessAt.map { ", last success \(Format.time($0))" } ?? ""
        return Check(name: "upstream", level: .ok, detail: "\(s.state)\(s.endpoint.map { " (\($0))" } ?? "")\(last)")
    }
}
