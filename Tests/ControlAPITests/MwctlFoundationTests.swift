import Foundation
import Testing

/// mwctl stays free of full Foundation: it links `FoundationEssentials` at most. Full
/// Foundation brings ICU's data (about 40 MB of a static binary); session 11 took the static
/// mwctl from 62 to 15 MB by dropping it, and one `import Foundation` in any module mwctl links
/// (its own, `DBus`, `ControlAPI`, `StatusModel`, `GNSS`, `ExportFormats`, `Basics`, a package
/// dependency) would bring it all back without a word. Such an import makes the compiler ask
/// the linker for `libFoundation`, so the built mwctl's dynamic section names it. (After such
/// an import is removed, an incremental build keeps the module's unchanged objects, which
/// still ask for it: touch that module's sources and build again; docs/operations.md, Size.)
@Suite("mwctl without full Foundation")
struct MwctlFoundationTests {
    /// The libraries of full Foundation and of its ICU, as the debug build links them.
    static let fullFoundation = ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so",
                                 "libFoundationNetworking.so", "libFoundationXML.so"]

    @Test func theBuiltMwctlNeedsNoFullFoundationLibrary() throws {
        let needed = try ELFDynamicSection.neededLibraries(ofFile: try CLI.path())
        #expect(needed.contains("libFoundationEssentials.so"), "the check reads the wrong thing: \(needed)")
        let full = needed.filter(Self.fullFoundation.contains)
        #expect(full.isEmpty, """
            mwctl links \(full.joined(separator: ", ")): a module it links imports full Foundation. \
            Find it with: grep -rn '^import Foundation$' Sources/mwctl Sources/ControlAPI Sources/StatusModel \
            Sources/DBus Sources/GNSS Sources/ExportFormats Sources/Basics (use FoundationEssentials; \
            docs/operations.md, Size). If none does, an object built before such an import was removed \
            still names it (an incremental build keeps a module's unchanged objects): find it with \
            readelf -p .swift1_autolink_entries on the objects in .build/debug/mwctl.product/Objects.LinkFileList \
            and touch its module's sources.
            """)
    }
}

/// The `DT_NEEDED` entries of a 64-bit little-endian ELF file: the shared libraries its
/// dynamic linker loads.
enum ELFDynamicSection {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static func neededLibraries(ofFile path: String) throws -> [String] {
        try neededLibraries(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    static func neededLibraries(_ bytes: [UInt8]) throws -> [String] {
        func integer(_ offset: Int, _ size: Int) throws -> Int {
            guard offset >= 0, offset + size <= bytes.count else { throw Malformed(description: "truncated at \(offset)") }
            return (0..<size).reversed().reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
        }
        guard bytes.starts(with: [0x7F, 0x45, 0x4C, 0x46]), bytes.count > 64, bytes[4] == 2, bytes[5] == 1 else {
            throw Malformed(description: "not a 64-bit little-endian ELF file")
        }
        let sectionTable = try integer(0x28, 8)
        let sectionSize = try integer(0x3A, 2)
        let sectionCount = try integer(0x3C, 2)
        let sections = try (0..<sectionCount).map { index in
            let base = sectionTable + index * sectionSize
            return (type: try integer(base + 4, 4), offset: try integer(base + 0x18, 8),
                    size: try integer(base + 0x20, 8), link: try integer(base + 0x28, 4))
        }
        let dynamicType = 6, neededTag = 1
        guard let dynamic = sections.first(where: { $0.type == dynamicType }), dynamic.link < sections.count else {
            throw Malformed(description: "no dynamic section")
        }
        let strings = sections[dynamic.link]
        var names: [String] = []
        for entry in stride(from: dynamic.offset, to: dynamic.offset + dynamic.size, by: 16) {
            let tag = try integer(entry, 8)
            if tag == 0 { break }
            guard tag == neededTag else { continue }
            let start = strings.offset + (try integer(entry + 8, 8))
            guard start < bytes.count, let end = bytes[start...].firstIndex(of: 0) else {
                throw Malformed(description: "name outside the file")
            }
            names.append(String(decoding: bytes[start..<end], as: UTF8.self))
        }
        return names
    }
}
