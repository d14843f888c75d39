/// Faults scheduled from the command line: `KIND@TIME[,key=value…]`, several separated by `;`
/// or given as repeated options.
///
/// ```
/// link-drop@10s,board=0                     link loss (supervision timeout) on board 0
/// stall@5s,board=1,seconds=3                no notifications from board 1 for 3 s
/// refuse-connect@0s,board=0,error=le-connection-abort-by-local
///                                           the next Connect fails (error: a reason text for
///                                           org.bluez.Error.Failed, or a full error name such as
///                                           org.bluez.Error.InProgress)
/// vanish@20s,board=2                        the board leaves radio range (InterfacesRemoved)
/// restart-bluetoothd@30s                    org.bluez released and re-taken; all objects rebuilt
/// power-cycle@40s                           adapter Powered false then true
/// drop-notifications@0s,board=0,fraction=0.1  drop 10 % of notifications on the link
/// press-button@3s,board=0                   the user presses (and releases) the button
/// ```
/// TIME is seconds since the simulator started: `10s`, `1.5s`, `250ms` or a bare number of
/// seconds. Boards are numbered from 0; `board` defaults to 0.
public struct FaultPlan: Sendable, Hashable {
    /// One kind of injected fault.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case linkDrop = "link-drop"
        case stall
        case refuseConnect = "refuse-connect"
        case vanish
        case restartBluetoothd = "restart-bluetoothd"
        case powerCycle = "power-cycle"
        case dropNotifications = "drop-notifications"
        case pressButton = "press-button"
        /// The board resets itself (brown-out, watchdog): the link drops, its tick restarts and
        /// its reset UID moves on; sensors stop, loggers and log entries stay.
        case boardReset = "board-reset"
    }

    /// One scheduled fault.
    public struct Step: Sendable, Hashable {
        public var kind: Kind
        /// Seconds after start.
        public var at: Double
        public var board: Int
        /// `stall` duration in seconds.
        public var seconds: Double
        /// `refuse-connect` error (reason text or error name).
        public var error: String
        /// `drop-notifications` fraction in 0…1.
        public var fraction: Double

        public init(kind: Kind, at: Double, board: Int = 0, seconds: Double = 5, error: String = "le-connection-abort-by-local",
                    fraction: Double = 0.1) {
            self.kind = kind
            self.at = at
            self.board = board
            self.seconds = seconds
            self.error = error
            self.fraction = fraction
        }
    }

    /// A fault specification that does not follow the grammar.
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public let text: String
        public let reason: String
        public var description: String { "invalid fault '\(text)': \(reason)" }
    }

    /// The steps, in the order given.
    public var steps: [Step]

    public init(steps: [Step] = []) { self.steps = steps }

    /// Parses one or more `;`-separated specifications.
    public init(parsing text: String) throws(ParseError) {
        steps = []
        for part in text.split(separator: ";") {
            let item = trimmed(part)
            if !item.isEmpty { steps.append(try Self.parseStep(item)) }
        }
    }

    static func parseStep(_ text: String) throws(ParseError) -> Step {
        let fields = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let head = fields[0].split(separator: "@", maxSplits: 1).map(String.init)
        guard head.count == 2 else { throw ParseError(text: text, reason: "expected KIND@TIME, e.g. link-drop@10s") }
        guard let kind = Kind(rawValue: head[0]) else {
            throw ParseError(text: text, reason: "unknown kind '\(head[0])' (known: \(Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        guard let at = parseSeconds(head[1]), at >= 0 else { throw ParseError(text: text, reason: "bad time '\(head[1])'") }
        var step = Step(kind: kind, at: at)
        for field in fields.dropFirst() {
            let pair = field.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { throw ParseError(text: text, reason: "expected key=value, got '\(field)'") }
            switch pair[0] {
            case "board":
                guard let board = Int(pair[1]), board >= 0 else { throw ParseError(text: text, reason: "board must be an index ≥ 0") }
                step.board = board
            case "seconds", "for":
                guard let seconds = parseSeconds(pair[1]), seconds > 0 else { throw ParseError(text: text, reason: "bad duration '\(pair[1])'") }
                step.seconds = seconds
            case "error":
                guard !pair[1].isEmpty else { throw ParseError(text: text, reason: "empty error") }
                step.error = pair[1]
            case "fraction":
                guard let fraction = Double(pair[1]), (0...1).contains(fraction) else {
                    throw ParseError(text: text, reason: "fraction must be within 0…1")
                }
                step.fraction = fraction
            default:
                throw ParseError(text: text, reason: "unknown key '\(pair[0])' (known: board, seconds, error, fraction)")
            }
        }
        return step
    }

    static func parseSeconds(_ text: String) -> Double? {
        if text.hasSuffix("ms") { return Double(text.dropLast(2)).map { $0 / 1000 } }
        if text.hasSuffix("s") { return Double(text.dropLast()) }
        return Double(text)
    }
}

/// Trims spaces at both ends (the library does not import Foundation).
private func trimmed(_ text: Substring) -> String {
    var slice = text
    while slice.first == " " { slice.removeFirst() }
    while slice.last == " " { slice.removeLast() }
    return String(slice)
}
