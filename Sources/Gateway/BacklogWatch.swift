import Buffer

/// The upload backlog the status shows: the buffer is asked (a database query) at most once
/// per ``interval``, and at once after something queued documents (``expire()``).
struct BacklogWatch {
    /// How often the buffer is asked while documents wait (the sync service sends them).
    static let interval: Int64 = 2_000_000_000

    private let read: () throws -> BacklogStats
    private var check = ThrottledCheck()
    /// The last reading (nil before the first, or when the buffer could not be read at start).
    private(set) var current: BacklogStats?

    /// A watch holding `read`'s answer now.
    init(read: @escaping () throws -> BacklogStats) {
        self.read = read
        current = try? read()
    }

    /// Whether documents waited at the last reading.
    var hasDocuments: Bool { (current?.count ?? 0) > 0 }

    /// Asks the buffer again when due at monotonic `now`; true when the backlog changed.
    /// Throws the buffer's error (the last reading stays).
    mutating func refresh(now: Int64) throws -> Bool {
        guard check.isDue(now: now, interval: Self.interval) else { return false }
        let fresh = try read()
        guard fresh != current else { return false }
        current = fresh
        return true
    }

    /// The next ``refresh(now:)`` asks the buffer (documents were just queued or sent).
    mutating func expire() { check.expire() }
}
