/// Tells bluetoothd's copies of one `StartNotify` notification from notifications.
///
/// bluetoothd 5.66 registers every `StartNotify` client of a characteristic with its GATT
/// client on its own, and each registration's callback stores the value and emits
/// `PropertiesChanged(Value)` at once (src/gatt-client.c, `notify_cb`). So with N notify
/// clients (ours, bleak, another gateway tool, a forgotten connection) one notification from
/// the board becomes N identical broadcast signals, and every client receives all N. The
/// signals carry nothing that tells them apart from N notifications with the same bytes.
///
/// What does tell them apart: the N copies are emitted in one pass of bluetoothd's
/// single-threaded main loop, so they are consecutive messages of bluetoothd's connection
/// (serials s, s+1, ..., s+N-1) with identical bytes. A *run* is such a sequence. A value the
/// board sends only once gives a run of exactly N; a value the board repeats k times in a row
/// gives k·N (or k·N split into several runs when bluetoothd sent anything in between).
///
/// The copy count is the shortest of the last ``window`` runs: a run is never shorter than
/// the copies, and a board repeating the very same reading ``window`` times in a row (each at
/// N copies) is what it would take to overstate it. The i-th signal of a run (from 0) is a
/// notification when i is a multiple of the copy count, so
/// - the first signal of a run always goes through: a new value is never dropped;
/// - a repeated value is kept once per copy count, so a board's real repeats survive;
/// - with one client (N = 1) every signal goes through, as before.
/// Only at the moment another client subscribes or leaves can one run be miscounted: up to
/// ``window`` notifications after a subscription are still taken at the old count (kept
/// twice), and a repeat in the first run after a client left is taken at the old count.
public struct NotificationCopies: Sendable {
    /// How many completed runs the copy count is taken from.
    public static let window = 3

    /// The number of signals bluetoothd currently sends per notification, as far as seen.
    public private(set) var copies = 1
    private var recentRuns: [Int] = []
    private var lastSerial: UInt32?
    private var lastBytes: [UInt8] = []
    private var runLength = 0

    public init() {}

    /// Whether the signal with `serial` (its sender's message serial) carrying `bytes` is a
    /// notification (true) or another copy of the one before (false). Signals must come from
    /// one sender, in the order they were sent, for one characteristic.
    public mutating func isNotification(serial: UInt32, bytes: [UInt8]) -> Bool {
        defer { lastSerial = serial }
        if let lastSerial, serial == lastSerial &+ 1, bytes == lastBytes {
            runLength += 1
            return (runLength - 1) % copies == 0
        }
        if runLength > 0 { finishRun(runLength) }
        runLength = 1
        lastBytes = bytes
        return true
    }

    private mutating func finishRun(_ length: Int) {
        recentRuns.append(length)
        if recentRuns.count > Self.window { recentRuns.removeFirst(recentRuns.count - Self.window) }
        copies = recentRuns.min() ?? 1
    }
}
