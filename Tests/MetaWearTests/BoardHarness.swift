import MetaWear
import MetaWearBoardModel

/// Drives our HandshakeSequencer against the independent SimulatedBoard, playing the part the
/// board-session actor will play (write, read DIS, fire timeouts), with no real clock.
struct BoardHarness {
    var board: SimulatedBoard
    var sequencer: HandshakeSequencer
    var timeouts: [HandshakeSequencer.Step] = []
    var pauses: [Int] = []
    var strayNotifications: [[UInt8]] = []

    init(board: SimulatedBoard, configuration: StreamingConfiguration, options: HandshakeSequencer.Options = .init()) {
        self.board = board
        sequencer = HandshakeSequencer(configuration: configuration, options: options)
    }

    /// Runs the handshake to its end and returns the final action.
    mutating func run() -> HandshakeSequencer.Action? {
        var queue = sequencer.start()
        var guardCounter = 0
        while !queue.isEmpty, guardCounter < 10_000 {
            guardCounter += 1
            let action = queue.removeFirst()
            switch action {
            case .write(let packet):
                // Stale streaming from a previous session may arrive at any time: feed it too.
                let stale = board.advance(to: board.nanoseconds + 5_000_000).map(\.bytes)
                strayNotifications += stale
                for bytes in stale { queue += sequencer.receive(notification: bytes) }
                for reply in board.write(packet.bytes).notifications { queue += sequencer.receive(notification: reply) }
            case .readDeviceInformation(let field):
                if let value = board.readDeviceInformation(field.shortUUID) {
                    queue += sequencer.receive(field, value: value)
                }
            case .pause(let ms):
                pauses.append(ms)
            case .awaitReply(let step):
                // Replies are synchronous here, so a step still awaited has no reply: time out.
                if sequencer.awaiting == step {
                    timeouts.append(step)
                    queue += sequencer.timedOut(step)
                }
            case .finished, .failed:
                return action
            }
        }
        return nil
    }
}
