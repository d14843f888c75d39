import Foundation
import Testing

extension PackageTests {
    /// The package says under which licences its files may be used and passes Debian's own
    /// checker: /usr/share/doc/mwgate/copyright is machine-readable (DEP-5), names mwgate's
    /// Apache-2.0 and every component the static binaries carry, and lintian finds no error.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/lintian"), "lintian missing (make deps)"))
    func thePackageNamesItsLicencesAndLintianFindsNoError() throws {
        let scratch = "/tmp/mwgd-lintian-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let deb = try buildPackage(into: scratch)
        let root = scratch + "/root"
        _ = try run("/usr/bin/dpkg", ["-x", deb, root])

        let copyright = try String(contentsOfFile: "\(root)/usr/share/doc/mwgate/copyright", encoding: .utf8)
        #expect(copyright.hasPrefix("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"))
        #expect(copyright.contains("Files: *\nCopyright: 2026 mwgate developers\nLicense: Apache-2.0\n"))
        // Each component linked into the binaries, with a licence paragraph for its licence.
        for component in ["swift_static", "_FoundationICU", "swift-nio/*", "swift-nio-ssl/*", "CNIOBoringSSL", "CCryptoBoringSSL",
                          "async-http-client/*", "postgres-nio/*", "GRDB.swift/*", "swift-crypto/*", "swift-log/*",
                          "swift-argument-parser/*", "swift-service-lifecycle/*", "CNIOExtrasZlib"] {
            #expect(copyright.contains(component), "copyright does not list \(component)")
        }
        let used = Set(copyright.split(separator: "\n").filter { $0.hasPrefix("License: ") }.map { $0.dropFirst(9) })
        for licence in used {
            #expect(copyright.contains("\nLicense: \(licence)\n "), "no text for the licence \(licence)")
        }
        #expect(used.isSuperset(of: ["Apache-2.0", "MIT", "Zlib", "Unicode-3.0", "Apache-2.0 with Runtime-Library exception"]))

        // The test packages the debug build uncompressed: its RUNPATH into the toolchain and
        // the uncompressed archive are the test's, not `make deb`'s (static, xz). lintian
        // exits non-zero on any error.
        let report = try run("/usr/bin/lintian", [
            "--suppress-tags", "custom-library-search-path,uses-no-compression-for-control-tarball,uses-no-compression-for-data-tarball",
            deb,
        ])
        let errors = report.split(separator: "\n").filter { $0.hasPrefix("E: ") }
        #expect(errors.isEmpty, "lintian reported errors:\n\(errors.joined(separator: "\n"))")
    }
}
