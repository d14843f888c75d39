// swift-tools-version:6.1
//
// mwgate: a Linux gateway for MbientLab MetaWear boards.
// The target list reads top-down as the data flow (docs/architecture.md draws it):
// Basics under everything; DBus -> BlueZ -> MetaWear -> Boards; GNSS; -> Recording -> Buffer
// -> Uplink; ThreadExecutor (a thread of its own) under Uplink and Gateway; Gateway wires the
// data path; GatewayConfig, ServiceSupport, ControlAPI, ControlServer and Daemon around it;
// thin executables. Then the simulator and fixtures the tests and benchmarks use, then the
// test targets. Lower modules never import higher ones.
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
        .executable(name: "mwsim", targets: ["mwsim"]),
        .executable(name: "mwgated", targets: ["mwgated"]),
        .library(name: "Basics", targets: ["Basics"]),
        .library(name: "BlueZSimulator", targets: ["BlueZSimulator"]),
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "GNSS", targets: ["GNSS"]),
        .library(name: "MetaWear", targets: ["MetaWear"]),
        .library(name: "Recording", targets: ["Recording"]),
        .library(name: "Buffer", targets: ["Buffer"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .library(name: "Boards", targets: ["Boards"]),
        .library(name: "Gateway", targets: ["Gateway"]),
        .library(name: "ServiceSupport", targets: ["ServiceSupport"]),
        .library(name: "GatewayConfig", targets: ["GatewayConfig"]),
        .library(name: "ControlAPI", targets: ["ControlAPI"]),
        .library(name: "ControlServer", targets: ["ControlServer"]),
        .library(name: "Uplink", targets: ["Uplink"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
    ],
    targets: [
        // Small helpers every layer may import instead of borrowing them from a sibling: the JSON
        // string escaper, the shortest round-trip and fixed-decimal number formatters, UTC
        // timestamps, the seeded random generator, byte sizes and the disk budget. No
        // dependencies, no Foundation.
        .target(name: "Basics", swiftSettings: strict),
        // libdbus-1, with a shim that re-exports the type-code macros Swift cannot import.
        .systemLibrary(
            name: "CDBus",
            path: "Sources/CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .target(name: "DBus", dependencies: ["Basics", "CDBus"], swiftSettings: strict),
        // A typed org.bluez client and the pure reconnection state machine (reference
        // bluez-dbus.md §2.3).
        .target(name: "BlueZ", dependencies: ["Basics", "DBus", "CDBus"], swiftSettings: strict),
        .target(name: "MetaWear", dependencies: ["Basics"], swiftSettings: strict),
        // Board sessions (handshake, streaming, watchdog, reconnection) and the fleet of them;
        // the I/O edge that keeps MetaWear pure.
        .target(name: "Boards", dependencies: ["Basics", "BlueZ", "MetaWear"], swiftSettings: strict),
        .target(name: "GNSS", dependencies: ["Basics"], swiftSettings: strict),
        // The one status model (`GatewayStatus`): filled by the gateway where the data is,
        // encoded as is by the control API and decoded by mwctl. Plain values, no dependencies.
        .target(name: "StatusModel", swiftSettings: strict),
        // Time base, gyro+GNSS merge, sessions and the upstream document model. Pure: values
        // in, values out, clocks injected.
        .target(name: "Recording", dependencies: ["Basics", "MetaWear", "GNSS"], swiftSettings: strict),
        // What the buffer's exporter shares with mwctl, which does not link the buffer: the export
        // formats' names, the pictures' text helpers and the history's index page. No Foundation.
        .target(name: "ExportFormats", dependencies: ["Basics"], swiftSettings: strict),
        // A thread of its own as an executor (one NIO event loop), for the blocking SQLite work
        // of the recording pipeline (Gateway) and the uploader (Uplink), off the shared pool.
        .target(
            name: "ThreadExecutor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The durable SQLite buffer (GRDB on the system libsqlite3): sessions, chunks,
        // outbox, history index, export.
        .target(
            name: "Buffer",
            dependencies: ["Basics", "ExportFormats", "Recording", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        // Background sync of sealed chunks to Firestore (REST), PostgreSQL and a local
        // directory, with idempotent retry, backoff and a drain-rate cap.
        .target(
            name: "Uplink",
            dependencies: [
                "Basics",
                "Buffer",
                "Recording",
                "ThreadExecutor",
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
        // The daemon's pipeline: boards, GNSS and the session controller under one actor on a
        // thread of its own, as swift-service-lifecycle services.
        .target(
            name: "Gateway",
            dependencies: [
                "Basics", "Boards", "BlueZ", "GNSS", "MetaWear", "Recording", "Buffer", "StatusModel",
                // The recording pipeline's own thread (RecordingThread).
                "ThreadExecutor",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The daemon's configuration model: a strict TOML reader with line numbers, defaults,
        // and validation against MetaWear/GNSS's own allowed values (byte sizes and the disk
        // budget from Basics, so it does not need the buffer).
        .target(name: "GatewayConfig", dependencies: ["Basics", "GNSS", "MetaWear"], swiftSettings: strict),
        // Service plumbing with no pipeline knowledge: sd_notify, a journald-native LogHandler,
        // systemd credentials, signal streams.
        .target(
            name: "ServiceSupport",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // The control API's names, JSON payloads and typed client (light: mwctl links it).
        .target(name: "ControlAPI", dependencies: ["DBus", "StatusModel"], swiftSettings: strict),
        // The daemon side of the control API: io.mwgate.Gateway1 on the system bus.
        .target(
            name: "ControlServer",
            dependencies: [
                "ControlAPI", "DBus", "Gateway", "Buffer", "ExportFormats", "Boards", "BlueZ", "Recording", "GNSS", "StatusModel",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The daemon's run logic (configuration -> settings, logging, sd_notify, watchdog,
        // reload, shutdown), kept out of the executable so it is testable.
        .target(
            name: "Daemon",
            dependencies: [
                "Basics", "Gateway", "GatewayConfig", "ServiceSupport", "ControlServer", "ControlAPI", "DBus", "ExportFormats", "Uplink", "Buffer", "StatusModel",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "mwgated",
            dependencies: ["Daemon", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        // mwctl links no module that imports full Foundation (which brings ICU's data, about
        // 40 MB): the buffer's reading for `--state-dir` is `mwgated buffer`, run as a child.
        .executableTarget(
            name: "mwctl",
            dependencies: [
                "Basics",
                "GNSS",
                "ControlAPI",
                "StatusModel",
                "DBus",
                "ExportFormats",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // ---- Simulation, fixtures and benchmarks (never linked into mwgated or mwctl) ----
        // A simulated board's brain, written only from the reference byte tables (it must not
        // share code with MetaWear, so symmetric encoder/decoder bugs are caught by tests).
        .target(name: "MetaWearBoardModel", swiftSettings: strict),
        // BlueZ 5.66 as seen over D-Bus, with simulated MetaWear boards behind it (mwsim).
        // Depends on the board model, never on MetaWear: replies must not come from our encoder.
        .target(name: "BlueZSimulator", dependencies: ["Basics", "DBus", "MetaWearBoardModel"], swiftSettings: strict),
        .executableTarget(
            name: "mwsim",
            dependencies: ["BlueZSimulator", .product(name: "ArgumentParser", package: "swift-argument-parser")],
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
            dependencies: ["Basics", "Recording", "Buffer", "MetaWear", "MetaWearBoardModel", "GNSS"],
            path: "Tests/Fixtures/RecorderFixture",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "mwbench",
            dependencies: [
                "Basics", "DBus", "GNSS", "MetaWear", "MetaWearBoardModel", "Recording", "Buffer",
                "ControlAPI", "ControlServer", "Gateway", "BlueZ", "Boards", "BlueZSimulator", "Uplink", "StatusModel",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/mwbench",
            swiftSettings: strict
        ),
        // Test fixtures shared by the test targets: a private dbus-daemon and child processes.
        .target(name: "TestSupport", dependencies: ["DBus", .product(name: "Logging", package: "swift-log")], path: "Tests/TestSupport", exclude: ["Fixtures"], swiftSettings: strict),
        // The in-process gateway start-up (bus, BlueZ simulator, state directory, gateway) shared
        // by the gateway, control API and fuzz tests; separate so light test targets stay light.
        .target(
            name: "GatewayTestSupport",
            dependencies: ["Gateway", "BlueZ", "BlueZSimulator", "GNSS", "MetaWear", "StatusModel", "TestSupport",
                           .product(name: "Logging", package: "swift-log")],
            path: "Tests/GatewayTestSupport",
            swiftSettings: strict
        ),
        // Upstream servers for tests (Google's Firestore emulator, a throwaway PostgreSQL),
        // shared by the sink tests and the whole-daemon tests.
        .target(
            name: "UpstreamFixtures",
            dependencies: [
                "Uplink", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            path: "Tests/UpstreamFixtures",
            swiftSettings: strict
        ),
        // ---- Tests ----
        .testTarget(name: "BasicsTests", dependencies: ["Basics"], swiftSettings: strict),
        .testTarget(
            name: "ServiceSupportTests",
            dependencies: ["ServiceSupport", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .testTarget(name: "GatewayConfigTests", dependencies: ["GatewayConfig", "GNSS", "MetaWear"], swiftSettings: strict),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "BlueZTests",
            dependencies: ["BlueZ", "DBus", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(name: "BoardsTests", dependencies: ["Boards", "BlueZ", "MetaWear", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "BlueZSimulatorTests",
            dependencies: ["BlueZSimulator", "DBus", "MetaWearBoardModel", "mwsim", "TestSupport"],
            exclude: ["Scripts"],
            swiftSettings: strict
        ),
        // Our Boards stack against the in-process BlueZ simulator on a private dbus-daemon.
        .testTarget(
            name: "BoardsEndToEndTests",
            dependencies: ["Boards", "BlueZ", "BlueZSimulator", "MetaWear", "MetaWearBoardModel", "DBus", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "GNSSTests",
            dependencies: ["GNSS"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RecordingTests",
            dependencies: ["Basics", "Recording", "MetaWear", "MetaWearBoardModel", "GNSS"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BufferTests",
            dependencies: ["Basics", "Buffer", "ExportFormats", "Recording", "MetaWear", "GNSS", "TestSupport", "mwrecord-fixture", "mwctl", "mwgated"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "Boards", "BlueZ", "GNSS", "MetaWear", "Recording", "Buffer", "StatusModel",
                "BlueZSimulator", "MetaWearBoardModel", "TestSupport", "GatewayTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The built mwgated as a subprocess on a private bus with mwsim as another.
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "Daemon", "Gateway", "GatewayConfig", "Buffer", "ServiceSupport", "StatusModel", "TestSupport", "UpstreamFixtures", "mwgated", "mwsim", "mwctl",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ControlAPITests",
            dependencies: [
                "ControlAPI", "ControlServer", "DBus", "Gateway", "BlueZ", "Buffer", "MetaWear", "Recording", "StatusModel",
                "BlueZSimulator", "MetaWearBoardModel", "mwctl", "mwgated", "TestSupport", "GatewayTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UplinkTests",
            dependencies: [
                "Basics", "Uplink", "Buffer", "Recording", "MetaWear", "GNSS", "mwuplink-fixture", "UpstreamFixtures", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strict
        ),
        // Seeded fuzzers over every parser of outside bytes (NMEA, MetaWear notifications and
        // handshake, configuration, control API over a real bus, the gpsd stream, recording into
        // the buffer); `make fuzz` runs them longer (docs/fuzzing.md).
        .testTarget(
            name: "FuzzTests",
            dependencies: [
                "Basics", "GNSS", "MetaWear", "MetaWearBoardModel", "GatewayConfig", "Recording", "Buffer", "BlueZ", "DBus",
                "ControlAPI", "ControlServer", "Gateway", "StatusModel", "TestSupport", "GatewayTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
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
