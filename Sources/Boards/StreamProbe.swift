import BlueZ
import MetaWear

/// The stream watchdog's question to a board that fell silent (issues 18 §2.5/§2.6, 21): a
/// register read. Its reply comes on the notify characteristic behind everything the board sent
/// before it (one socket with AcquireNotify, one signal sequence with StartNotify), so samples
/// before or with the reply say the stream is alive and only late (bluetoothd slow to hand
/// on); the reply alone says the board answers but does not stream; neither says the link is
/// dead. Restarting a stream that is only late switches the sensors and the flash log's
/// source off until the start arrives (real loss) and begins a new timestamper on late arrivals
/// (false gap marks): the real-BlueZ VM's startnotify group had both in every run.
struct StreamProbe {
    /// The gyro's module info (`13 80`): a board answers every module-info read, for a module
    /// it lacks too (metawear-protocol.md §3.2), the read changes nothing on the board, and
    /// after the handshake nothing else asks for it, so its reply is the probe's.
    static let request = ModuleInfo.request(for: .gyro)

    /// What the open probe has shown so far.
    enum Verdict: Equatable {
        /// Neither the reply nor a sample came yet, within the bound.
        case waiting
        /// The reply came, and no sample before or with it: the board does not stream.
        case answeredWithoutSamples
        /// Nothing came within the bound: the link is dead.
        case unanswered
    }

    /// When the open probe went out; nil while none is open (never sent, or settled).
    private(set) var sentAt: ContinuousClock.Instant?
    private var answered = false
    /// Replies still to come, of the open probe and of probes that samples settled first:
    /// each is taken out of the notifications when it comes.
    private var repliesOwed = 0

    /// A probe went out now.
    mutating func sent() {
        sentAt = .now
        answered = false
        repliesOwed += 1
    }

    /// Samples came: the stream lives; the open probe, if any, is settled.
    mutating func samplesArrived() {
        sentAt = nil
        answered = false
    }

    /// The open probe led to a restart or the link's end: settled.
    mutating func settle() {
        samplesArrived()
    }

    /// `batch` without the probe's replies, which are no samples; a reply to the open probe
    /// is noted.
    mutating func takeReplies(from batch: [GattNotification]) -> [GattNotification] {
        guard repliesOwed > 0, batch.contains(where: { Self.isReply($0.bytes) }) else { return batch }
        var rest: [GattNotification] = []
        rest.reserveCapacity(batch.count)
        for notification in batch {
            if repliesOwed > 0, Self.isReply(notification.bytes) {
                repliesOwed -= 1
                if sentAt != nil { answered = true }
            } else {
                rest.append(notification)
            }
        }
        return rest
    }

    /// The open probe's verdict, with `bound` the longest wait for its reply; nil when none is open.
    func verdict(bound: Duration) -> Verdict? {
        guard let sentAt else { return nil }
        if answered { return .answeredWithoutSamples }
        return ContinuousClock.now - sentAt > bound ? .unanswered : .waiting
    }

    private static func isReply(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == ModuleID.gyro.rawValue && bytes[1] == 0x80
    }
}
