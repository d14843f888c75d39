import Buffer
import Logging

/// Sends one session's documents of a round as one commit, in order, and settles each
/// result in the outbox: a permanent refusal dead-letters the document (a refused batch is
/// retried one document at a time to find it), a transient failure puts the documents back
/// to pending. While the commit is in flight it loads the session's next documents and
/// hands them to the sink to prepare, so the next round finds them ready.
///
/// A value without state of its own: the service runs one per session of a round, side by
/// side, and books what they report.
struct CommitSender: Sendable {
    let store: BufferStore
    let sink: any Sink
    let clock: any SyncClock
    /// How many documents of a session are loaded ahead (one commit's worth).
    let documentsPerCommit: Int
    let logger: Logger

    /// What became of a session's documents.
    enum Outcome: Sendable {
        /// `sent` documents stored; `failure` set when the rest hit a transient error;
        /// `toMark`: stored documents whose `sent` mark is still to be written.
        case done(sent: Int, failure: SinkError?, toMark: [OutboxItem] = [])
        case cancelled
    }

    /// Sends `items` (one session's, in seq order) once `startAt` has come, taking those
    /// already loaded from `prepared`. Returns the outcome and the session's next documents,
    /// loaded meanwhile (realtime_data only), by outbox handle.
    func send(_ items: [OutboxItem], startAt: Double, prepared: [Int64: SinkDocument]) async -> (Outcome, next: [Int64: SinkDocument]) {
        do { try await clock.sleep(until: startAt) } catch {
            _ = try? store.releaseInFlight(items.map(\.id))
            return (.cancelled, [:])
        }
        var documents: [(OutboxItem, SinkDocument)] = []
        for item in items {
            do {
                // A records document revised since the outbox was read: the revision is queued
                // after the chunks it adds, and goes up in its turn instead of this version.
                guard let document = try load(item, prepared: prepared) else { continue }
                documents.append((item, document))
            } catch {
                deadLetter(item, reason: "cannot load \(item.kind.rawValue)/\(item.documentName): \(error)")
            }
        }
        guard !documents.isEmpty else { return (.done(sent: 0, failure: nil), [:]) }
        async let next = prepareNext(after: items[items.count - 1])
        let outcome = await writeAndSettle(documents)
        return (outcome, await next)
    }

    private func writeAndSettle(_ documents: [(OutboxItem, SinkDocument)]) async -> Outcome {
        do {
            try await sink.write(documents.map(\.1))
            return .done(sent: documents.count, failure: nil, toMark: documents.map(\.0))
        } catch {
            if Task.isCancelled {
                _ = try? store.releaseInFlight(documents.map(\.0.id))
                return .cancelled
            }
            if case .permanent = error, documents.count > 1 {
                // Find the culprit: one at a time, in order; the others go through.
                return await sendOneByOne(documents)
            }
            return .done(sent: 0, failure: settle(documents.map(\.0), error))
        }
    }

    /// The session's next documents after `item`, loaded (checksum verified, decoded) and
    /// handed to the sink to encode ahead; keyed by outbox handle. A sealed chunk never
    /// changes, so a document loaded here is the one a later load would give.
    private func prepareNext(after item: OutboxItem) async -> [Int64: SinkDocument] {
        guard let next = try? store.pendingItems(sessionID: item.sessionID, afterSeq: item.seq, limit: documentsPerCommit) else { return [:] }
        var documents: [Int64: SinkDocument] = [:]
        var ordered: [SinkDocument] = []
        for n in next where n.kind == .realtimeData {
            if let doc = try? store.realtimeDocument(name: n.documentName) {
                documents[n.id] = .realtimeData(doc)
                ordered.append(.realtimeData(doc))
            }
        }
        if !ordered.isEmpty { await sink.prepare(ordered) }
        return documents
    }

    private func sendOneByOne(_ documents: [(OutboxItem, SinkDocument)]) async -> Outcome {
        var sent = 0
        for (index, (item, doc)) in documents.enumerated() {
            do {
                try await sink.write([doc])
                SentMarks.write([item.id], store: store, logger: logger)
                sent += 1
            } catch {
                if Task.isCancelled {
                    _ = try? store.releaseInFlight(documents[index...].map(\.0.id))
                    return .cancelled
                }
                if case .permanent = error {
                    deadLetter(item, reason: error.reason)
                    continue
                }
                return .done(sent: sent, failure: settle(documents[index...].map(\.0), error))
            }
        }
        return .done(sent: sent, failure: nil)
    }

    /// Permanent: dead letters (no failure to back off from). Transient: back to pending.
    private func settle(_ items: [OutboxItem], _ error: SinkError) -> SinkError? {
        if case .permanent = error {
            for item in items { deadLetter(item, reason: error.reason) }
            return nil
        }
        for item in items {
            do { try store.markFailed(item.id, permanent: false, reason: error.reason) } catch {
                logger.error("cannot record a failed upload: \(error)")
            }
        }
        return error
    }

    /// The item's document; nil for a records document whose outbox row a revision replaced.
    private func load(_ item: OutboxItem, prepared: [Int64: SinkDocument]) throws -> SinkDocument? {
        switch item.kind {
        case .realtimeData:
            if let ready = prepared[item.id], ready.name == item.documentName { return ready }
            guard let doc = try store.realtimeDocument(name: item.documentName) else {
                throw LoadError(description: "chunk not in the buffer")
            }
            return .realtimeData(doc)
        case .records:
            switch try store.recordsDocument(forUpload: item) {
            case .replaced: return nil
            case .missing: throw LoadError(description: "session has no submitted survey")
            case .document(let doc):
                guard doc.name == item.documentName else {
                    throw LoadError(description: "session's records document is \(doc.name)")
                }
                return .records(doc)
            }
        }
    }

    struct LoadError: Error, CustomStringConvertible { var description: String }

    private func deadLetter(_ item: OutboxItem, reason: String) {
        logger.error("dead letter", metadata: ["document": "\(item.kind.rawValue)/\(item.documentName)", "reason": "\(reason)"])
        do { try store.markFailed(item.id, permanent: true, reason: reason) } catch {
            logger.error("cannot dead-letter \(item.documentName): \(error)")
        }
    }
}
