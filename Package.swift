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
        .library(name: "Recording", targets: ["Recording"]),
        .library(name: "Buffer", targets: ["Buffer"]),
        .library(name: "Uplink", targets: ["Uplink"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
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
        // Time base, gyro+GNSS merge, sessions and the upstream document model. Pure: values
        // in, values out, clocks injected.
        .target(name: "Recording", dependencies: ["MetaWear", "GNSS"], swiftSettings: strict),
        // The durable SQLite buffer (GRDB on the system libsqlite3): sessions, chunks,
        // outbox, history index, export.
        .target(
            name: "Buffer",
            dependencies: ["Recording", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        // Background sync of sealed chunks to Firestore (REST), PostgreSQL and a local
        // directory, with idempotent retry, backoff and a drain-rate cap.
        .target(
            name: "Uplink",
            dependencies: [
                "Buffer",
                "Recording",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // Writes documents through the directory sink in a loop; the crash test kills it.
        .executableTarget(
            name: "mwuplink-fixture",
            dependencies: ["Uplink", "Recording"],
            path: "Tests/Fixtures/UplinkFixture",
            swiftSettings: strict
        ),
        // Records from simulated boards and an NMEA replay into a real database; the crash
        // test kills it with SIGKILL at random moments.
        .executableTarget(
            name: "mwrecord-fixture",
            dependencies: ["Recording", "Buffer", "MetaWear", "MetaWearBoardModel", "GNSS"],
            path: "Tests/Fixtures/RecorderFixture",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "mwctl",
            dependencies: [
                "GNSS",
                "Buffer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "mwbench",
            dependencies: [
                "DBus", "GNSS", "MetaWear", "MetaWearBoardModel", "Recording", "Buffer", "Uplink",
                .product(name: "Logging", package: "swift-log"),
            ],
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
            name: "RecordingTests",
            dependencies: ["Recording", "MetaWear", "MetaWearBoardModel", "GNSS"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BufferTests",
            dependencies: ["Buffer", "Recording", "MetaWear", "GNSS", "mwrecord-fixture"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UplinkTests",
            dependencies: [
                "Uplink", "Buffer", "Recording", "MetaWear", "GNSS", "mwuplink-fixture",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MetaWearTests",
            dependencies: ["MetaWear", "MetaWearBoardModel"],
            swiftSettings: strict
        ),
    ]
)
