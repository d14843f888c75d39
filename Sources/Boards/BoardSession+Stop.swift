import MetaWear

extension BoardSession {
    /// What a stop writes: the plan's stop commands while streaming, the full sensor cleanup
    /// of a board known from an earlier handshake otherwise (its sensors may still run from
    /// before this link), then `FE 06` so the board ends the link even if bluetoothd's
    /// `Disconnect` is late.
    func stopCommands() -> [Packet] {
        var commands: [Packet] = []
        if let plan {
            commands = plan.stopCommands
        } else if let description {
            commands = Commands.cleanup(chip: description.chip, modules: description.modules)
        }
        // The board stops writing its flash log; what it holds stays for a later download.
        if current?.flashLogging == true { commands.append(LoggingCommands.stop) }
        if options.watchButton, description?.modules.has(.switchModule) == true { commands.append(Commands.unsubscribeButton) }
        if ledSignal != .off, description != nil { commands.append(LEDSignal.stopAndClear) }
        commands.append(Commands.disconnect)
        return commands
    }
}
