/// A request to begin shutting down, made by whoever sees the shutdown first (the signal,
/// a service's own turn, cancellation) and awaited by the one child task that carries the
/// shutdown out; or word that a shutdown's step is done, awaited by the one that waits for
/// it (``BoardService/linksEnding(within:)``): a bounded one-element stream, so asking again
/// is free and nothing is stored but the request itself.
struct ShutdownRequest: Sendable {
    private let requests: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (requests, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for the shutdown (any number of times, from anywhere).
    func request() {
        continuation.yield()
    }

    /// Returns at the first request, or when the calling task is cancelled. One caller only.
    func awaitRequest() async {
        for await _ in requests { return }
    }
}
