/// How a method handler answers its call: at once, or later from work that runs beside the
/// calls that follow.
///
/// One connection's incoming calls are handled one after another in arrival order, as
/// bluetoothd's main loop handles them: a handler starts only after the one before it has
/// returned. A handler whose answer takes time (a link being made, a write waiting for its
/// acknowledgement) does the part that must keep the calls' order (e.g. handing written bytes
/// to the board), then returns ``later(_:)`` with the rest, so the calls after it are not held.
public struct DBusMethodResult: Sendable {
    enum Answer: Sendable {
        case values([DBusValue])
        case later(@Sendable () async throws -> [DBusValue])
    }

    let answer: Answer
    let followUp: (@Sendable () async -> Void)?

    /// Answers with `values` at once.
    public static func reply(_ values: [DBusValue]) -> DBusMethodResult {
        DBusMethodResult(answer: .values(values), followUp: nil)
    }

    /// Answers with what `work` returns (or the error it throws) once it is done. `work` runs
    /// beside the calls that follow; it is cancelled when the connection stops serving calls.
    public static func later(_ work: @escaping @Sendable () async throws -> [DBusValue]) -> DBusMethodResult {
        DBusMethodResult(answer: .later(work), followUp: nil)
    }

    /// The same answer; `followUp` runs once the answer is sent, beside the calls that follow
    /// (e.g. a board ending its link after a write was acknowledged).
    public func then(_ followUp: @escaping @Sendable () async -> Void) -> DBusMethodResult {
        DBusMethodResult(answer: answer, followUp: followUp)
    }

    /// The same answer with `transform` applied to its values when they are ready.
    func mapValues(_ transform: @escaping @Sendable ([DBusValue]) throws -> [DBusValue]) throws -> DBusMethodResult {
        switch answer {
        case .values(let values):
            DBusMethodResult(answer: .values(try transform(values)), followUp: followUp)
        case .later(let work):
            DBusMethodResult(answer: .later { try transform(try await work()) }, followUp: followUp)
        }
    }
}
