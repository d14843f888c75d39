import Foundation
import Testing
import TestSupport

/// The packaged systemd, sysusers, tmpfiles, D-Bus and udev files, checked with the real tools.
/// Missing tools skip the test with the reason shown in the test output.
@Suite(.serialized) struct ServiceFilesTests {
    /// A copy of the unit whose ExecStart points at an existing binary: verify refuses a unit
    /// whose binary is missing, and /usr/bin/mwgated is not installed on a build machine.
    func unitCopy(_ transform: (String) -> String = { $0 }) throws -> String {
        let directory = try Tool.scratchDirectory("unit")
        let text = try Tool.read("systemd/mwgated.service")
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("ExecStart=") ? "ExecStart=/bin/true" : String($0) }
            .joined(separator: "\n")
        let path = directory + "/mwgated.service"
        try transform(text).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(.enabled(if: Tool.available("systemd-analyze"), "systemd-analyze is not installed"))
    func unitVerifiesSilently() throws {
        let result = try Tool.run("systemd-analyze", ["verify", "--man=no", try unitCopy()])
        #expect(result.status == 0)
        #expect(result.combined == "", "systemd-analyze verify must print nothing:\n\(result.combined)")
        // The check itself can fail: verify only warns about a misspelt key, and that output
        // is what CI must catch.
        let typo = try Tool.run("systemd-analyze", ["verify", "--man=no", try unitCopy { $0.replacingOccurrences(of: "WatchdogSec=", with: "WatchDogSec=") }])
        #expect(typo.combined.contains("WatchDogSec"))
    }

    @Test(.enabled(if: Tool.available("systemd-analyze"), "systemd-analyze is not installed"))
    func exposureAtMostTwo() throws {
        let path = try unitCopy()
        let result = try Tool.run("systemd-analyze", ["security", "--offline=true", "--no-pager", path])
        let line = result.combined.split(separator: "\n").first { $0.contains("Overall exposure level") }
        let score = line.flatMap { text in text.split(separator: " ").compactMap { Double($0) }.first }
        let exposure = try #require(score, "no exposure line in:\n\(result.combined)")
        #expect(exposure <= 2.0)
        // The threshold form CI can use (exposure × 10).
        #expect(try Tool.run("systemd-analyze", ["security", "--offline=true", "--threshold=20", "--no-pager", path]).status == 0)
    }

    @Test func unitHasTheServiceContract() throws {
        let lines = Set(try Tool.read("systemd/mwgated.service").split(separator: "\n").map(String.init))
        for required in [
            "Type=notify", "NotifyAccess=main", "WatchdogSec=30s", "Restart=on-failure", "User=mwgate",
            "StateDirectory=mwgate", "RuntimeDirectory=mwgate", "ConfigurationDirectory=mwgate",
            "LoadCredential=firestore-key.json", "LoadCredential=postgres-password",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "DeviceAllow=char-ttyACM rw", "DeviceAllow=char-ttyUSB rw",
            "DevicePolicy=closed", "SupplementaryGroups=dialout bluetooth", "ExecReload=/bin/kill -HUP $MAINPID",
            "ExecStart=/usr/bin/mwgated", "ProtectSystem=strict",
        ] {
            #expect(lines.contains(required), "missing \(required)")
        }
    }

    @Test(.enabled(if: Tool.available("systemd-sysusers", "systemd-tmpfiles"), "systemd-sysusers/systemd-tmpfiles are not installed"))
    func sysusersAndTmpfilesInAScratchRoot() throws {
        let root = try Tool.scratchDirectory("root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        // A minimal account database with the groups a Debian system has.
        try "root:x:0:0:root:/root:/bin/sh\n".write(toFile: root + "/etc/passwd", atomically: true, encoding: .utf8)
        try "root:x:0:\ndialout:x:20:\n".write(toFile: root + "/etc/group", atomically: true, encoding: .utf8)
        let users = try Tool.run("systemd-sysusers", ["--root=\(root)", "-"], stdin: try Tool.read("systemd/mwgate.sysusers"))
        #expect(users.status == 0)
        // sysusers reports what it creates on stderr; anything else there is a warning.
        let complaints = users.stderr.split(separator: "\n").filter { !$0.hasPrefix("Creating ") }
        #expect(complaints.isEmpty, "\(users.stderr)")
        #expect(users.stderr.contains("Creating user 'mwgate'"))
        let passwd = try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)
        let group = try String(contentsOfFile: root + "/etc/group", encoding: .utf8)
        let account = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("mwgate:") })
        #expect(account.hasSuffix(":MetaWear gateway daemon:/var/lib/mwgate:/usr/sbin/nologin"))
        #expect(group.split(separator: "\n").contains("dialout:x:20:mwgate"))
        #expect(group.split(separator: "\n").contains { $0.hasPrefix("mwgate:x:") })

        let files = try Tool.run("systemd-tmpfiles", ["--root=\(root)", "--create", "-"], stdin: try Tool.read("systemd/mwgate.tmpfiles"))
        #expect(files.status == 0)
        #expect(files.combined == "", "\(files.combined)")
        let state = try FileManager.default.attributesOfItem(atPath: root + "/var/lib/mwgate")
        #expect((state[.posixPermissions] as? NSNumber)?.intValue == 0o750)
        let uid = account.split(separator: ":")[2]
        #expect((state[.ownerAccountID] as? NSNumber).map { "\($0)" } == String(uid))
        let credstore = try FileManager.default.attributesOfItem(atPath: root + "/etc/credstore")
        #expect((credstore[.posixPermissions] as? NSNumber)?.intValue == 0o700)
    }
}

/// The D-Bus policy, loaded by a private dbus-daemon with system-bus-like defaults.
@Suite(.serialized) struct DBusPolicyTests {
    /// Starts a system-like bus (TestSupport's `SystemLikeBus`) that includes `policy`;
    /// returns nil and the daemon's output when it refuses.
    static func startBus(policy: String, in directory: String) throws -> (SystemLikeBus?, String) {
        let policyPath = directory + "/policy.conf"
        try policy.write(toFile: policyPath, atomically: true, encoding: .utf8)
        do {
            return (try SystemLikeBus(including: policyPath, in: URL(fileURLWithPath: directory)), "")
        } catch let refused as SystemLikeBusRefused {
            return (nil, refused.output)
        }
    }

    @Test(.enabled(if: Tool.available("dbus-daemon"), "dbus-daemon is not installed"))
    func packagedPolicyLoads() throws {
        let directory = try Tool.scratchDirectory("dbus")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (bus, output) = try Self.startBus(policy: try Tool.read("dbus/io.mwgate.Gateway1.conf"), in: directory)
        #expect(bus != nil, "dbus-daemon refused the packaged policy:\n\(output)")
        bus?.stop()
        // The same check rejects a malformed file, so it can fail.
        let broken = try Tool.read("dbus/io.mwgate.Gateway1.conf").replacingOccurrences(of: "<policy user=\"root\">", with: "<policy>")
        let (refused, message) = try Self.startBus(policy: broken, in: directory)
        refused?.stop()
        #expect(refused == nil)
        #expect(message.contains("<policy> element must have exactly one"))
    }

    /// Who may own and call the name. The packaged file names `mwgate`, which does not exist on
    /// a build machine, so the same file is loaded with the account replaced by stand-ins
    /// (`nobody` owns, group `users` may call); everything else is unchanged.
    @Test(.enabled(
        if: Tool.available("dbus-daemon", "dbus-send", "setpriv", "/usr/bin/python3") && Tool.isRoot,
        "needs root, dbus-daemon, dbus-send, setpriv and /usr/bin/python3 with python3-dbusmock"))
    func onlyTheServiceAccountOwnsAndOnlyRootAndGroupMayCall() throws {
        let directory = try Tool.scratchDirectory("dbus")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let policy = try Tool.read("dbus/io.mwgate.Gateway1.conf")
            .replacingOccurrences(of: "user=\"mwgate\"", with: "user=\"nobody\"")
            .replacingOccurrences(of: "group=\"mwgate\"", with: "group=\"users\"")
        let (started, output) = try Self.startBus(policy: policy, in: directory)
        let bus = try #require(started, "bus did not start: \(output)")
        defer { bus.stop() }

        func call(as identity: [String], _ arguments: [String]) throws -> Tool.Result {
            try Tool.run("setpriv", identity + ["dbus-send", "--bus=\(bus.address)", "--print-reply"] + arguments, timeout: 30)
        }
        let ping = ["--dest=io.mwgate.Gateway1", "/io/mwgate/Gateway1", "org.freedesktop.DBus.Peer.Ping"]
        let requestName = ["--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.RequestName",
                           "string:io.mwgate.Gateway1", "uint32:4"]
        let root = ["--reuid=root", "--regid=root", "--keep-groups"]
        let member = ["--reuid=bin", "--regid=bin", "--groups=users"]
        let stranger = ["--reuid=daemon", "--regid=daemon", "--clear-groups"]

        #expect(try call(as: root, requestName).combined.contains("AccessDenied"), "root must not own the name")
        #expect(try call(as: stranger, requestName).combined.contains("AccessDenied"))

        // The service account owns the name (a dbusmock object stands in for mwgated).
        let mock = Process()
        mock.executableURL = URL(fileURLWithPath: Tool.find("setpriv") ?? "/usr/bin/setpriv")
        mock.arguments = ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-m", "dbusmock", "--system",
                          "io.mwgate.Gateway1", "/io/mwgate/Gateway1", "io.mwgate.Gateway1"]
        mock.environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "PATH": "/usr/bin:/bin"]
        mock.standardOutput = FileHandle.nullDevice
        mock.standardError = FileHandle.nullDevice
        try Spawning.run(mock)
        defer {
            kill(mock.processIdentifier, SIGKILL)
            mock.waitForExit()
        }
        var owned = false
        for _ in 0..<300 where !owned {
            let owner = try call(as: root, ["--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                            "org.freedesktop.DBus.NameHasOwner", "string:io.mwgate.Gateway1"])
            owned = owner.stdout.contains("boolean true")
            if !owned { usleep(100_000) }
        }
        try #require(owned, "dbusmock (as the service account) never owned io.mwgate.Gateway1")

        #expect(try call(as: root, ping).status == 0)
        let fromMember = try call(as: member, ping)
        #expect(fromMember.status == 0, "\(fromMember.combined)")
        let fromStranger = try call(as: stranger, ping)
        #expect(fromStranger.status != 0)
        #expect(fromStranger.combined.contains("AccessDenied"))
    }
}

/// The udev rule, parsed by the installed udevadm the way the reference found works on
/// Debian 12 (udevadm 252 has no `verify`): `udevadm test` reads every rules file and names
/// invalid keys and operators, but always exits 0, so the output is searched. The rule is
/// placed in /etc/udev/rules.d inside a private mount namespace, so the host is untouched.
@Suite(.serialized) struct UdevRuleTests {
    @Test(.enabled(if: Tool.available("udevadm", "unshare") && Tool.isRoot
        && FileManager.default.fileExists(atPath: "/sys/class/tty/tty"), "needs root, udevadm, unshare and /sys/class/tty/tty"))
    func ruleParsesCleanly() throws {
        let directory = try Tool.scratchDirectory("udev")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Tool.read("udev/61-mwgate-gps.rules").write(toFile: directory + "/61-mwgate-gps.rules", atomically: true, encoding: .utf8)
        // A broken control file proves the output is being read.
        try "SUBSYSTEM==\"tty\", SYMLNK+=\"x\"\n".write(toFile: directory + "/62-control.rules", atomically: true, encoding: .utf8)
        let script = "mount --bind '\(directory)' /etc/udev/rules.d && exec udevadm test --action=add /sys/class/tty/tty"
        let result = try Tool.run("unshare", ["--mount", "sh", "-c", script], timeout: 60)
        #expect(result.combined.contains("Reading rules file: /etc/udev/rules.d/61-mwgate-gps.rules"), "\(result.combined.suffix(2000))")
        #expect(result.combined.contains("62-control.rules:1 Invalid key 'SYMLNK'"))
        let ours = result.combined.split(separator: "\n").filter { $0.contains("61-mwgate-gps.rules") && !$0.hasPrefix("Reading rules file") }
        #expect(ours.isEmpty, "udevadm complained about our rule:\n\(ours.joined(separator: "\n"))")
    }

    /// udevadm 254's `verify` also wants a comma between tokens; 252 cannot check that.
    @Test func tokensAreCommaSeparatedAndReceiversCovered() throws {
        let text = try Tool.read("udev/61-mwgate-gps.rules")
        let rules = text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        let token = try Regex(#"^[A-Z_]+(\{[A-Za-z_]+\})?(==|!=|\+=|-=|:=|=)"[^"]*"$"#)
        for rule in rules {
            let tokens = rule.split(separator: ", ")
            for piece in tokens { #expect(String(piece).wholeMatch(of: token) != nil, "bad token '\(piece)' in: \(rule)") }
        }
        for id in ["\"1546\"", "\"067b\", ATTRS{idProduct}==\"2303\"", "\"10c4\", ATTRS{idProduct}==\"ea60\"", "\"0403\", ATTRS{idProduct}==\"6001|6015\""] {
            #expect(text.contains("ATTRS{idVendor}==\(id)"), "missing \(id)")
        }
        for line in ["SYMLINK+=\"gps%n\"", "GROUP=\"dialout\", MODE=\"0660\"", "TAG+=\"systemd\"", "ENV{ID_MM_DEVICE_IGNORE}=\"1\""] {
            #expect(text.contains(line), "missing \(line)")
        }
    }
}
