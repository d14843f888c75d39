import ArgumentParser
import BlueZSimulator
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// `mwsim --peripheral`: boards as real BLE peripherals behind the system's bluetoothd.
extension MWSim {
    func runPeripherals(busAddress: String) async throws {
        let model = SimulatorConfiguration.Model(rawValue: model) ?? .metamotionR
        let profiles = SimulatorConfiguration.profiles(model: model, count: peripheralAdapters.count)
            .map { pnpID ? $0.withMbientLabPnPID() : $0 }
        var peripherals: [GATTPeripheral] = []
        var streams: [AsyncStream<GATTPeripheral.Command>] = []
        var continuations: [AsyncStream<GATTPeripheral.Command>.Continuation] = []
        for (index, adapter) in peripheralAdapters.enumerated() {
            var options = GATTPeripheral.Options(adapter: adapter, profile: profiles[index], seed: UInt32(index + 1),
                                                 log: Self.timestamped)
            options.advertisesServiceUUID = !withoutServiceUUID
            options.offersDeviceInformation = !withoutDeviceInformation
            options.ignoredCentrals = Set(ignoredCentrals)
            peripherals.append(try GATTPeripheral(options: options))
            let (stream, continuation) = AsyncStream.makeStream(of: GATTPeripheral.Command.self, bufferingPolicy: .bufferingNewest(64))
            streams.append(stream)
            continuations.append(continuation)
        }
        let finishAll = { @Sendable [continuations] in continuations.forEach { $0.finish() } }
        // Standard input is read on a thread of its own (a blocking read has no place on the
        // cooperative pool); end of input leaves the boards running.
        DispatchQueue.global().async { [continuations] in
            while let line = readLine() {
                switch PeripheralCommandLine.parse(line, boards: continuations.count) {
                case .success(let (board, command)): continuations[board].yield(command)
                case .failure(let error): writeToStandardError("mwsim: \(error.description)")
                }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (peripheral, stream) in zip(peripherals, streams) {
                group.addTask { try await peripheral.run(busAddress: busAddress, commands: stream) }
            }
            group.addTask {
                await waitForTermination(duration)
                finishAll()
            }
            do {
                try await group.waitForAll()
            } catch {
                finishAll()
                throw error
            }
        }
    }

    /// A log line with wall-clock seconds first, to line up with the test's faults.
    @Sendable static func timestamped(_ line: String) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let milliseconds = String(now.tv_nsec / 1_000_000)
        writeToStandardError("\(now.tv_sec).\(String(repeating: "0", count: 3 - milliseconds.count) + milliseconds) " + line)
    }
}

/// One command line of peripheral mode: `BOARD VERB [SECONDS]`.
enum PeripheralCommandLine {
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ line: String, boards: Int) -> Result<(Int, GATTPeripheral.Command), Invalid> {
        let words = line.split(separator: " ").map(String.init)
        guard words.count >= 2, let board = Int(words[0]), (0..<boards).contains(board) else {
            return .failure(Invalid(description: "command '\(line)': expected 'BOARD VERB', BOARD within 0..<\(boards)"))
        }
        switch (words[1], words.count) {
        case ("disconnect", 2): return .success((board, .disconnect))
        case ("silence", 3):
            guard let seconds = Double(words[2]), seconds > 0 else {
                return .failure(Invalid(description: "command '\(line)': silence needs a positive number of seconds"))
            }
            return .success((board, .silence(seconds: seconds)))
        case ("power-cycle", 2): return .success((board, .powerCycle))
        case ("remove", 2): return .success((board, .remove))
        case ("restore", 2): return .success((board, .restore))
        case ("press", 2): return .success((board, .pressButton))
        case ("readout-rate", 3):
            guard let perSecond = Int(words[2]), GATTPeripheral.readoutRates.contains(perSecond) else {
                return .failure(Invalid(description: "command '\(line)': readout-rate needs notifications per second within "
                                        + "\(GATTPeripheral.readoutRates.lowerBound)…\(GATTPeripheral.readoutRates.upperBound)"))
            }
            return .success((board, .readoutRate(notificationsPerSecond: perSecond)))
        default:
            return .failure(Invalid(description: "command '\(line)': unknown; use disconnect, silence S, power-cycle, remove, "
                                    + "restore, press or readout-rate N"))
        }
    }
}
