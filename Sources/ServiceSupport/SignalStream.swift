import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The signals a daemon acts on.
public enum ServiceSignal: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// `systemctl stop`: shut down cleanly.
    case terminate = 15
    /// `systemctl reload` (ExecReload=kill -HUP $MAINPID): re-read the configuration.
    case hangup = 1
    /// Ctrl-C when run by hand: same as terminate.
    case interrupt = 2

    public var description: String {
        switch self {
        case .terminate: "SIGTERM"
        case .hangup: "SIGHUP"
        case .interrupt: "SIGINT"
        }
    }
}

/// Delivers signals as an `AsyncStream`, through DispatchSource so no code runs in signal
/// context. Creating a stream ignores the signals' default action (which would kill the
/// process) for as long as the stream is alive; ending the stream restores it.
///
/// ```swift
/// for await signal in SignalStream.make([.terminate, .hangup]) {
///     switch signal { case .hangup: reload(); default: return shutdown() }
/// }
/// ```
/// For swift-service-lifecycle, pass `.sigterm` to `ServiceGroup(gracefulShutdownSignals:)`
/// instead and use this only for SIGHUP, so the two do not both claim SIGTERM.
public enum SignalStream {
    /// A stream of the given signals, in arrival order (bursts of one signal may coalesce,
    /// as the kernel does).
    public static func make(
        _ signals: Set<ServiceSignal>, bufferingPolicy: AsyncStream<ServiceSignal>.Continuation.BufferingPolicy = .bufferingNewest(16)
    ) -> AsyncStream<ServiceSignal> {
        let queue = DispatchQueue(label: "mwgate.signals")
        return AsyncStream(bufferingPolicy: bufferingPolicy) { continuation in
            var sources: [any DispatchSourceSignal] = []
            for signal in signals.sorted(by: { $0.rawValue < $1.rawValue }) {
                Glibc.signal(signal.rawValue, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signal.rawValue, queue: queue)
                source.setEventHandler {
                    for _ in 0..<max(1, Int(source.data)) { continuation.yield(signal) }
                }
                source.resume()
                sources.append(source)
            }
            let box = SourceBox(sources: sources, signals: Array(signals))
            continuation.onTermination = { _ in box.cancel() }
        }
    }
}

/// Keeps the dispatch sources alive for the stream's lifetime.
private final class SourceBox: @unchecked Sendable {
    // Touched only from onTermination, which runs once.
    private let sources: [any DispatchSourceSignal]
    private let signals: [ServiceSignal]

    init(sources: [any DispatchSourceSignal], signals: [ServiceSignal]) {
        self.sources = sources
        self.signals = signals
    }

    func cancel() {
        for source in sources { source.cancel() }
        for signal in signals { Glibc.signal(signal.rawValue, SIG_DFL) }
    }
}
