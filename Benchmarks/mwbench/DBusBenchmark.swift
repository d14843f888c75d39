// `mwbench dbus serve|client`: D-Bus round trips and signal throughput through a real
// dbus-daemon, with CPU time per message for this process and for the daemon.
// scripts/bench/dbus.sh starts the daemon, the server and both clients (ours and python3-dbus).
import DBus
import Foundation

enum DBusBenchmark {
    static let service = "org.mwgate.Bench"
    static let path: DBusObjectPath = "/org/mwgate/bench"
    static let interface = "org.mwgate.Bench"

    static func run(_ arguments: [String]) async {
        var options: [String: String] = [:]
        var index = 1
        while index + 1 < arguments.count {
            options[arguments[index].replacingOccurrences(of: "--", with: "")] = arguments[index + 1]
            index += 2
        }
        guard let mode = arguments.first, let address = options["address"] else {
            fail("usage: mwbench dbus serve|client --address ADDR [--calls N --signals N --daemon-pid PID]")
        }
        do {
            switch mode {
            case "serve": try await serve(address: address)
            case "client":
                try await client(address: address, calls: Int(options["calls"] ?? "") ?? 20_000,
                                 signals: Int(options["signals"] ?? "") ?? 50_000,
                                 daemonPID: Int32(options["daemon-pid"] ?? "") ?? 0)
            default: fail("mwbench dbus: unknown mode '\(mode)'")
            }
        } catch {
            fail("mwbench dbus \(mode): \(error)")
        }
    }

    /// The echo service both clients talk to: `Ping(u) -> u` and `Blast(u)`, which emits
    /// that many `Tick(u)` signals.
    static func serve(address: String) async throws {
        let connection = try await DBusConnection(address: address)
        let object = DBusExportedObject(DBusInterface(interface, methods: [
            DBusMethod("Ping", in: [.uint32], out: [.uint32]) { call in call.arguments },
            DBusMethod("Blast", in: [.uint32]) { call in
                let count = try call.decode(UInt32.self)
                for index in 0..<count {
                    try connection.emit(path: path, interface: interface, member: "Tick", arguments: [.uint32(index)])
                }
                return []
            },
        ], signals: [DBusSignalDescription("Tick", signature: [.uint32])]))
        try await connection.export(object, at: path)
        guard try await connection.requestName(service) == .primaryOwner else { fail("name \(service) taken") }
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while connection.isConnected { try await Task.sleep(for: .milliseconds(200)) }
    }

    struct CPU {
        let own: Double
        let daemon: Double
        let wall: ContinuousClock.Instant

        static func now(daemonPID: Int32) -> CPU {
            CPU(own: ProcessCPU.ownSeconds(), daemon: daemonPID > 0 ? ProcessCPU.seconds(daemonPID) ?? 0 : 0, wall: .now)
        }

    }

    static func report(_ name: String, count: Int, from start: CPU, to end: CPU) {
        let wall = end.wall - start.wall
        let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        print("\(name)_count=\(count)")
        print("\(name)_per_second=\(Int(Double(count) / seconds))")
        print("\(name)_own_us=\(String(format: "%.2f", (end.own - start.own) / Double(count) * 1e6))")
        print("\(name)_daemon_us=\(String(format: "%.2f", (end.daemon - start.daemon) / Double(count) * 1e6))")
    }

    static func client(address: String, calls: Int, signals: Int, daemonPID: Int32) async throws {
        let connection = try await DBusConnection(address: address)
        defer { connection.close() }
        // Warm-up, then sequential round trips.
        for index in 0..<200 {
            _ = try await connection.call(destination: service, path: path, interface: interface, member: "Ping",
                                          arguments: [.uint32(UInt32(index))], timeout: .seconds(30))
        }
        var start = CPU.now(daemonPID: daemonPID)
        for index in 0..<calls {
            let reply = try await connection.call(destination: service, path: path, interface: interface, member: "Ping",
                                                  arguments: [.uint32(UInt32(index))], timeout: .seconds(30))
            guard try reply.decode(UInt32.self) == UInt32(index) else { fail("Ping answered the wrong value") }
        }
        report("calls", count: calls, from: start, to: CPU.now(daemonPID: daemonPID))

        // Pipelined: 16 calls in flight, as a gateway talking to several boards would have;
        // then the same with the callers on the connection's executor (its I/O thread):
        // replies resume them where they are read, with no hand-off to the cooperative pool.
        let window = 16
        func pipelined(_ label: String, executor: (any TaskExecutor)?) async throws {
            let start = CPU.now(daemonPID: daemonPID)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<window {
                    group.addTask(executorPreference: executor) {
                        for index in stride(from: worker, to: calls, by: window) {
                            let reply = try await connection.call(destination: service, path: path, interface: interface,
                                                                  member: "Ping", arguments: [.uint32(UInt32(index))],
                                                                  timeout: .seconds(30))
                            guard try reply.decode(UInt32.self) == UInt32(index) else { fail("Ping answered the wrong value") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            report(label, count: calls, from: start, to: CPU.now(daemonPID: daemonPID))
        }
        try await pipelined("pipelined", executor: nil)
        try await pipelined("pipelined_loop", executor: connection.executor)

        let stream = try await connection.signals(matching: DBusMatchRule(
            sender: service, interface: interface, member: "Tick", path: path))
        start = CPU.now(daemonPID: daemonPID)
        _ = try await connection.call(destination: service, path: path, interface: interface, member: "Blast",
                                      arguments: [.uint32(UInt32(signals))], timeout: .seconds(120))
        var expected: UInt32 = 0
        for try await signal in stream {
            let value = try signal.message.decode(UInt32.self)
            guard value == expected else { fail("signal \(value) arrived, expected \(expected)") }
            expected += 1
            if expected == UInt32(signals) { break }
        }
        report("signals", count: signals, from: start, to: CPU.now(daemonPID: daemonPID))

        // Idle: a connection with a live subscription and nothing to do should not wake up.
        start = CPU.now(daemonPID: daemonPID)
        try await Task.sleep(for: .seconds(3))
        let idle = CPU.now(daemonPID: daemonPID)
        print("idle_own_ms_per_s=\(String(format: "%.3f", (idle.own - start.own) / 3 * 1000))")
    }
}
