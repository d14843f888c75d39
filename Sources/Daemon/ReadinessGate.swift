import ServiceSupport

/// `READY=1` only once every part that must be up has said so (the pipeline ticking, the
/// control API's bus name owned); sent exactly once.
public actor ReadinessGate {
    private var waitingFor: Set<String>
    private var sent = false
    private let onReady: @Sendable () async -> Void

    /// A gate waiting for each of `parts`, then calling `onReady` once.
    public init(parts: Set<String>, onReady: @escaping @Sendable () async -> Void) {
        waitingFor = parts
        self.onReady = onReady
    }

    /// `part` is up.
    public func arrived(_ part: String) async {
        waitingFor.remove(part)
        guard waitingFor.isEmpty, !sent else { return }
        sent = true
        await onReady()
    }
}
