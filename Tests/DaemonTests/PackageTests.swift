import Foundation
import Glibc
import TestSupport
import Testing

/// `make deb`'s script, run on the debug binaries (a release build is too slow for a test):
/// the package installs into a scratch root with `dpkg -x`, its unit verifies there with
/// `systemd-analyze verify --root`, and its sysusers/tmpfiles snippets create the account and
/// directories in that root.
@Suite(.enabled(if: PackagingTools.present, "dpkg, systemd or binutils tools missing"))
struct PackageTests {

    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func run(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment.merge(extra) { _, new in new }
        let child = try ChildProcess(executable, arguments, environment: environment)
        let output = String(decoding: child.output.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: child.errors.readDataToEndOfFile(), as: UTF8.self)
        let status = child.wait()
        guard status == 0 else { throw TestBusError(message: "\(executable) \(arguments) exited \(status): \(errors)\(output)") }
        return output + errors
    }

    /// Builds the package (version 1.2.3, uncompressed) from the test build's binaries into
    /// `directory`; its path. The maintainer is a real-looking address, as a published package's
    /// must be (lintian refuses the script's placeholder on localhost).
    func buildPackage(into directory: String) throws -> String {
        let binaries = URL(fileURLWithPath: try DaemonFixture.executable("mwgated")).deletingLastPathComponent().path
        let built = try run("/bin/bash", [Self.repo.appendingPathComponent("scripts/package-deb.sh").path, directory],
                            environment: ["MWGATE_DEB_BIN_DIR": binaries, "MWGATE_VERSION": "1.2.3", "MWGATE_DEB_COMPRESSION": "none",
                                          "MWGATE_MAINTAINER": "mwgate packaging test <packaging-test@mwgate.example.org>"])
        return try #require(built.split(separator: "\n").last.map(String.init))
    }

    @Test func theDebianPackageInstallsIntoAScratchRootAndItsUnitVerifies() throws {
        let scratch = "/tmp/mwgd-deb-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let deb = try buildPackage(into: scratch)
        #expect(deb.hasSuffix("mwgate_1.2.3_\(try run("/usr/bin/dpkg", ["--print-architecture"]).trimmingCharacters(in: .whitespacesAndNewlines)).deb"))
        let depends = try run("/usr/bin/dpkg-deb", ["-f", deb, "Depends"])
        #expect(depends.contains("libdbus-1-3"))
        #expect(depends.contains("libsqlite3-0"))
        #expect(try run("/usr/bin/dpkg-deb", ["-f", deb, "Package"]).trimmingCharacters(in: .whitespacesAndNewlines) == "mwgate")
        let conffiles = try run("/usr/bin/dpkg-deb", ["--info", deb, "conffiles"])
        #expect(conffiles.contains("/etc/mwgate/mwgated.toml"))

        let root = scratch + "/root"
        _ = try run("/usr/bin/dpkg", ["-x", deb, root])
        for file in ["usr/bin/mwgated", "usr/bin/mwctl", "usr/lib/systemd/system/mwgated.service", "usr/lib/sysusers.d/mwgate.conf",
                     "usr/lib/tmpfiles.d/mwgate.conf", "usr/share/dbus-1/system.d/io.mwgate.Gateway1.conf",
                     "usr/lib/udev/rules.d/61-mwgate-gps.rules", "etc/mwgate/mwgated.toml", "usr/share/doc/mwgate/operations.md",
                     "usr/share/bash-completion/completions/mwctl", "usr/share/zsh/vendor-completions/_mwctl",
                     "usr/share/fish/vendor_completions.d/mwctl.fish", "usr/share/man/man1/mwctl.1.gz",
                     "usr/share/man/man8/mwgated.8.gz", "usr/share/doc/mwgate/changelog.gz"] {
            #expect(FileManager.default.fileExists(atPath: "\(root)/\(file)"), "\(file) missing from the package")
        }
        // The changelog's entry is this package's version.
        let changelog = try run("/bin/sh", ["-c", "zcat '\(root)/usr/share/doc/mwgate/changelog.gz' | head -1"])
        #expect(changelog.hasPrefix("mwgate (1.2.3) unstable; urgency=medium"))
        // The completions are mwctl's own (generated from its parser), not empty files.
        let bashCompletion = try String(contentsOfFile: "\(root)/usr/share/bash-completion/completions/mwctl", encoding: .utf8)
        #expect(bashCompletion.contains("survey") && bashCompletion.contains("session"))
        let manPage = try run("/bin/sh", ["-c", "gzip -dc '\(root)/usr/share/man/man1/mwctl.1.gz'"])
        #expect(manPage.contains(".TH") && manPage.contains("doctor"))
        let daemonPage = try run("/bin/sh", ["-c", "gzip -dc '\(root)/usr/share/man/man8/mwgated.8.gz'"])
        #expect(daemonPage.contains(".TH MWGATED 8") && daemonPage.contains("check\\-config") && daemonPage.contains("SIGHUP"))
        // The packaged binary runs and accepts the packaged default configuration.
        let check = try run("\(root)/usr/bin/mwgated", ["--check-config", "--config", "\(root)/etc/mwgate/mwgated.toml"])
        #expect(check.contains("configuration is valid"))

        // What a real system provides around the package: the base targets and /bin/kill.
        let units = "\(root)/usr/lib/systemd/system"
        for name in try FileManager.default.contentsOfDirectory(atPath: "/lib/systemd/system") where name.hasSuffix(".target") {
            try? FileManager.default.copyItem(atPath: "/lib/systemd/system/\(name)", toPath: "\(units)/\(name)")
        }
        try FileManager.default.copyItem(atPath: "/bin/kill", toPath: "\(root)/usr/bin/kill")
        try FileManager.default.createSymbolicLink(atPath: "\(root)/bin", withDestinationPath: "usr/bin")
        let verify = try run("/usr/bin/systemd-analyze", ["verify", "--man=no", "--root=\(root)", "mwgated.service"])
        #expect(verify.isEmpty, "systemd-analyze verify printed:\n\(verify)")

        _ = try run("/usr/bin/systemd-sysusers", ["--root=\(root)", "mwgate.conf"])
        let passwd = try String(contentsOfFile: "\(root)/etc/passwd", encoding: .utf8)
        let account = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("mwgate:") })
        #expect(account.hasSuffix(":/var/lib/mwgate:/usr/sbin/nologin"))
        let group = try String(contentsOfFile: "\(root)/etc/group", encoding: .utf8)
        #expect(group.split(separator: "\n").contains { $0.hasPrefix("dialout:") && $0.hasSuffix("mwgate") })
        if getuid() == 0 {
            _ = try run("/usr/bin/systemd-tmpfiles", ["--root=\(root)", "--create", "mwgate.conf"])
            let uid = try #require(account.split(separator: ":").dropFirst(2).first.flatMap { Int($0) })
            let attributes = try FileManager.default.attributesOfItem(atPath: "\(root)/var/lib/mwgate")
            #expect((attributes[.ownerAccountID] as? NSNumber)?.intValue == uid)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o750)
        }
    }
}

extension PackageTests {
    /// dpkg itself installs, removes and purges the package in a scratch root (its own dpkg
    /// database there, maintainer scripts run chrootless with DPKG_ROOT): the account is made
    /// through sysusers in that root, remove keeps the configuration and the buffer, purge
    /// removes both, and nothing outside the root is touched.
    @Test func dpkgInstallsRemovesAndPurgesThePackageInAScratchRoot() throws {
        let scratch = "/tmp/mwgd-dpkg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let deb = try buildPackage(into: scratch)
        let root = scratch + "/root"
        for directory in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(directory)", withIntermediateDirectories: true)
        }
        for file in ["var/lib/dpkg/status", "var/lib/dpkg/available"] {
            _ = FileManager.default.createFile(atPath: "\(root)/\(file)", contents: nil)
        }
        // The scratch root has no libc6 etc. in its dpkg database: only the dependency check is forced.
        let dpkg = ["--root=\(root)", "--force-script-chrootless", "--force-depends", "--log=/dev/null"]
            + (getuid() == 0 ? [] : ["--force-not-root"])
        let hostPasswd = try String(contentsOfFile: "/etc/passwd", encoding: .utf8)

        let installed = try run("/usr/bin/dpkg", dpkg + ["-i", deb])
        #expect(installed.contains("Setting up mwgate (1.2.3)"))
        #expect(try run("/usr/bin/dpkg-query", ["--root=\(root)", "-W", "-f=${Status}", "mwgate"]) == "install ok installed")
        let passwd = try String(contentsOfFile: "\(root)/etc/passwd", encoding: .utf8)
        #expect(passwd.split(separator: "\n").contains { $0.hasPrefix("mwgate:") && $0.hasSuffix(":/var/lib/mwgate:/usr/sbin/nologin") })
        #expect(FileManager.default.fileExists(atPath: "\(root)/usr/bin/mwgated"))
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: "\(root)/var/lib/mwgate", isDirectory: &isDirectory) && isDirectory.boolValue)
        // This machine's accounts are untouched.
        #expect(try String(contentsOfFile: "/etc/passwd", encoding: .utf8) == hostPasswd)

        // remove: the program, units and rules go; the configuration and the buffer stay.
        _ = FileManager.default.createFile(atPath: "\(root)/var/lib/mwgate/buffer.sqlite", contents: Data("sessions".utf8))
        _ = try run("/usr/bin/dpkg", dpkg + ["-r", "mwgate"])
        for file in ["usr/bin/mwgated", "usr/bin/mwctl", "usr/lib/systemd/system/mwgated.service", "usr/lib/udev/rules.d/61-mwgate-gps.rules",
                     "usr/share/dbus-1/system.d/io.mwgate.Gateway1.conf", "usr/lib/sysusers.d/mwgate.conf"] {
            #expect(!FileManager.default.fileExists(atPath: "\(root)/\(file)"), "\(file) left after remove")
        }
        #expect(FileManager.default.fileExists(atPath: "\(root)/etc/mwgate/mwgated.toml"))
        #expect(FileManager.default.fileExists(atPath: "\(root)/var/lib/mwgate/buffer.sqlite"))

        // purge: the configuration and the buffer go too; dpkg forgets the package.
        _ = try run("/usr/bin/dpkg", dpkg + ["-P", "mwgate"])
        #expect(!FileManager.default.fileExists(atPath: "\(root)/etc/mwgate"))
        #expect(!FileManager.default.fileExists(atPath: "\(root)/var/lib/mwgate"))
        #expect(!FileManager.default.fileExists(atPath: "\(root)/usr"))
        #expect((try? run("/usr/bin/dpkg-query", ["--root=\(root)", "-W", "mwgate"])) == nil, "dpkg still lists mwgate after purge")
    }
}

enum PackagingTools {
    static let present = ["dpkg-deb", "dpkg", "systemd-analyze", "systemd-sysusers", "systemd-tmpfiles", "objdump"].allSatisfy { tool in
        ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }
    }
}
