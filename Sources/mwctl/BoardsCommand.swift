import ArgumentParser
import Basics
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StatusModel

/// `mwctl boards list|scan|add|remove`.
struct BoardsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "boards", abstract: "List, scan for, add and remove MetaWear boards.",
        subcommands: [List.self, Scan.self, Add.self, Remove.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the boards the gateway runs.")
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let boards = try await DaemonAccess.run { try await $0.boards() }
            if output.json { return try emitJSON(boards) }
            if boards.isEmpty { return emitLine("(no boards; find some with: mwctl boards scan)") }
            emitLine("ADDRESS            STATE        STREAMING  MODEL                      BATTERY  GYRO(Hz)  SAMPLES")
            for b in boards {
                let battery = b.batteryPercent.map { "\($0)%" } ?? "?"
                emitLine([b.address.padded(17), b.state.padded(11), (b.isStreaming ? "yes" : "no").padded(9), (b.model ?? "-").padded(25),
                          battery.padded(7, left: true), FixedDecimal.string(b.gyroRateHz, places: 0).padded(8, left: true) + "  " + String(b.gyroSamplesReceived).padded(7, left: true)]
                    .joined(separator: "  "))
            }
        }
    }

    struct Scan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Scan for advertising MetaWear boards.")
        @Option(help: "How long to scan, seconds (1-120).") var seconds: UInt32 = 5
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard (1...120).contains(seconds) else { throw ValidationError("--seconds must be 1 to 120") }
        }

        func run() async throws {
            let found = try await DaemonAccess.run { try await $0.scan(seconds: seconds) }
            if output.json { return try emitJSON(found) }
            if found.isEmpty { return emitLine("(no MetaWear board advertised in \(seconds) s; wake it by pressing its button)") }
            for f in found {
                emitLine("\(f.address)  \(f.name ?? "-")  rssi \(f.rssi.map(String.init) ?? "?")\(f.added ? "  (running)" : "")")
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Connect a board and stream from it.")
        @Argument(help: "The board's address, AA:BB:CC:DD:EE:FF.") var address: String
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await DaemonAccess.run { try await $0.addBoard(address) }
            if output.json { try emitJSON(["added": address]) } else { emitLine("added \(address)") }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop a board (sensors off, disconnect) and forget it.")
        @Argument(help: "The board's address, AA:BB:CC:DD:EE:FF.") var address: String
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await DaemonAccess.run { try await $0.removeBoard(address) }
            if output.json { try emitJSON(["removed": address]) } else { emitLine("removed \(address)") }
        }
    }
}
