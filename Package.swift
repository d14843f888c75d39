// swift-tools-version:6.1
//
// mwgate: a Linux gateway for MbientLab MetaWear boards.
// The target list follows the data flow: DBus -> BlueZ -> MetaWear / GNSS -> Recording
// -> Buffer -> Uplink -> Gateway, with thin executables on top. Lower modules never
// import higher ones.
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "mwgate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "mwctl", targets: ["mwctl"]),
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "GNSS", targets: ["GNSS"]),
        .library(name: "MetaWear", targets: ["MetaWear"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // libdbus-1, with a shim that re-exports the type-code macros Swift cannot import.
        .systemLibrary(
            name: "CDBus",
            path: "Sources/CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .target(name: "DBus", dependencies: ["CDBus"], swiftSettings: strict),
        .target(name: "GNSS", swiftSettings: strict),
        .target(name: "MetaWear", swiftSettings: strict),
        // A simulated board's brain, written only from the reference byte tables (it must not
        // share code with MetaWear, so symmetric encoder/decoder bugs are caught by tests).
        .target(name: "MetaWearBoardModel", swiftSettings: strict),
        .executableTarget(
            name: "mwctl",
            dependencies: [
                "GNSS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "mwbench",
            dependencies: ["DBus", "GNSS", "MetaWear"],
            path: "Benchmarks/mwbench",
            swiftSettings: strict
        ),
        .testTarget(name: "DBusTests", dependencies: ["DBus"], swiftSettings: strict),
        .testTarget(
            name: "GNSSTests",
            dependencies: ["GNSS"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MetaWearTests",
            dependencies: ["MetaWear", "MetaWearBoardModel"],
            swiftSettings: strict
        ),
    ]
)
