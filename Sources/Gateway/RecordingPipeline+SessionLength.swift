import Basics
import MetaWear
import Recording

/// How long a session records (`[session] max_duration`, or the length `mwctl session start
/// --duration` asks for), and the refusal of a length a board's flash cannot hold at a logged
/// rate (issue 21 part 3: a board records rates beyond the link to its flash for the gateway
/// to download, so the whole session must fit there).
extension RecordingPipeline {
    /// A board's flash as its description names it: model and entries.
    struct FlashCapacity: Equatable {
        var model: String
        var entries: Int
    }

    /// Notes the flash of a board that connected (its model's documented capacity, or what
    /// its logging module reports).
    func noteFlashCapacity(_ key: String, _ description: BoardDescription) {
        guard let info = description.modules[.logging], info.isPresent,
              let entries = LoggingCapabilities(moduleInfo: info, model: description.model)?.capacityEntries else { return }
        flashCapacities[key] = FlashCapacity(model: description.modelName, entries: entries)
    }

    /// Why a session of `seconds` cannot record at the logged rates on the boards known so
    /// far, nil when it can (nothing is logged, or every known flash holds it; a board whose
    /// capacity no source states is not refused).
    func sessionLengthRefusal(seconds: Double) -> String? {
        let rates = settings.streaming.loggedRates
        guard !rates.isEmpty else { return nil }
        let refusals = flashCapacities.sorted { $0.key < $1.key }.compactMap { key, flash in
            LogBudget(capacityEntries: flash.entries, rates: rates).refusal(sessionSeconds: seconds, model: flash.model)
                .map { "board \(key): \($0)" }
        }
        return refusals.isEmpty ? nil : refusals.joined(separator: "; ")
    }

    /// The length the next session gets: `requested` seconds, else `[session] max_duration`;
    /// refused when a board's flash cannot hold it at the logged rates.
    func checkSessionLength(requested: Double?) throws(CommandError) -> Double? {
        let length = requested ?? settings.maxSessionDuration
        if let length, let refusal = sessionLengthRefusal(seconds: length) {
            throw CommandError("cannot record a session of \(DurationText.string(length)): \(refusal)")
        }
        return length
    }

    /// Ends the session that has recorded its length.
    func endSessionAtItsLength(now: Int64) {
        guard let length = sessionLength, let startedAt = sessionStartedAt, case .recording = controller.state,
              Double(now - startedAt) >= length * 1e9 else { return }
        guard finishing == nil else { return }
        logger.info("the session reached its length of \(DurationText.string(length)): ending it")
        if !beginFinishing(trigger: .maxDuration, now: now) { _ = try? stop(trigger: .maxDuration, now: now) }
    }
}
