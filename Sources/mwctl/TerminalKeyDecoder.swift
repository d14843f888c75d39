/// A key the line editor acts on, decoded from the bytes a terminal sends.
enum TerminalKey: Equatable {
    /// A printable ASCII character.
    case character(Character)
    case left, right, home, end, up, down
    case wordLeft, wordRight
    /// Backspace: the character before the cursor.
    case deleteBackward
    /// Delete (and Ctrl-D on a non-empty line): the character under the cursor.
    case deleteForward
    /// Ctrl-W: the word before the cursor.
    case deleteWordBackward
    /// Ctrl-U: everything before the cursor.
    case deleteToStart
    /// Ctrl-K: everything from the cursor on.
    case deleteToEnd
    case complete, enter
    /// Ctrl-C.
    case interrupt
    /// Ctrl-D.
    case endOfInput
    /// A key the editor has no use for (function keys, Esc alone, other control bytes).
    case ignored
}

/// Turns terminal input bytes into keys: control bytes, and the ANSI/VT escape sequences
/// xterm, the Linux console, tmux and screen send for cursor keys, Home/End and Delete
/// (`ESC [ A`, `ESC O H`, `ESC [ 1 ~`, `ESC [ 3 ~`, `ESC [ 1 ; 5 C` ...). Pure: bytes in, keys
/// out, so that it is testable with tables; the terminal edge decides when an Esc stands alone
/// (``flush()``).
struct TerminalKeyDecoder {
    private enum State {
        case ground
        case escape
        /// Control Sequence Introducer (`ESC [`) with the parameter bytes so far.
        case csi([UInt8])
        /// Single Shift 3 (`ESC O`), as cursor keys send in application mode.
        case ss3
    }

    private var state = State.ground
    /// Longer parameter runs are not keys a person typed; the sequence is dropped.
    private static let maximumParameterBytes = 16

    /// True in the middle of an escape sequence: the caller may wait briefly for its rest.
    var isInsideSequence: Bool {
        if case .ground = state { return false }
        return true
    }

    /// The key this byte completes, if any.
    mutating func feed(_ byte: UInt8) -> TerminalKey? {
        switch state {
        case .ground:
            if byte == 0x1B {
                state = .escape
                return nil
            }
            return Self.plain(byte)
        case .escape:
            state = .ground
            switch byte {
            case UInt8(ascii: "["): state = .csi([])
            case UInt8(ascii: "O"): state = .ss3
            case UInt8(ascii: "b"), UInt8(ascii: "B"): return .wordLeft
            case UInt8(ascii: "f"), UInt8(ascii: "F"): return .wordRight
            case 0x7F, 0x08: return .deleteWordBackward
            case 0x1B:
                state = .escape
                return .ignored
            default: return .ignored
            }
            return nil
        case .csi(var parameters):
            // Parameter and intermediate bytes run until a final byte (0x40-0x7E).
            guard (0x40...0x7E).contains(byte) else {
                guard (0x20...0x3F).contains(byte), parameters.count < Self.maximumParameterBytes else {
                    state = .ground
                    return .ignored
                }
                parameters.append(byte)
                state = .csi(parameters)
                return nil
            }
            state = .ground
            return Self.controlSequence(parameters: String(decoding: parameters, as: UTF8.self), final: byte)
        case .ss3:
            state = .ground
            return Self.controlSequence(parameters: "", final: byte)
        }
    }

    /// Ends an unfinished sequence (the terminal sent nothing more): a lone Esc is ignored.
    mutating func flush() -> TerminalKey? {
        guard isInsideSequence else { return nil }
        state = .ground
        return .ignored
    }

    private static func plain(_ byte: UInt8) -> TerminalKey {
        switch byte {
        case 0x20...0x7E: return .character(Character(Unicode.Scalar(byte)))
        case 0x0D, 0x0A: return .enter
        case 0x7F, 0x08: return .deleteBackward
        case 0x09: return .complete
        case 0x01: return .home // Ctrl-A
        case 0x05: return .end // Ctrl-E
        case 0x02: return .left // Ctrl-B
        case 0x06: return .right // Ctrl-F
        case 0x10: return .up // Ctrl-P
        case 0x0E: return .down // Ctrl-N
        case 0x15: return .deleteToStart // Ctrl-U
        case 0x0B: return .deleteToEnd // Ctrl-K
        case 0x17: return .deleteWordBackward // Ctrl-W
        case 0x03: return .interrupt // Ctrl-C
        case 0x04: return .endOfInput // Ctrl-D
        default: return .ignored
        }
    }

    /// `parameters` as sent, e.g. "" for `ESC [ A`, "3" for `ESC [ 3 ~`, "1;5" for Ctrl-Right.
    private static func controlSequence(parameters: String, final: UInt8) -> TerminalKey {
        let fields = parameters.split(separator: ";", omittingEmptySubsequences: false)
        // A modifier (1 + Shift 1, Alt 2, Ctrl 4) other than none turns Left/Right into word moves.
        let modified = fields.count >= 2 && (Int(fields[1]) ?? 1) > 1
        switch final {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "C"): return modified ? .wordRight : .right
        case UInt8(ascii: "D"): return modified ? .wordLeft : .left
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        case UInt8(ascii: "~"):
            switch fields.first.flatMap({ Int($0) }) {
            case 1, 7: return .home
            case 4, 8: return .end
            case 3: return .deleteForward
            default: return .ignored
            }
        default: return .ignored
        }
    }
}
