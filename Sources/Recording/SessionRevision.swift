/// Samples a board's flash log added to a session after its survey went in (issue 21): the
/// correction chunks revise the session's records document. One per session and board, once
/// the gap (a restart gap, a stop gap, a logged rest) is done, for the journal.
public struct SessionRevision: Hashable, Sendable {
    public var sessionID: String
    public var board: String
    /// Backfilled samples sealed into the session after its survey.
    public var samples: Int

    /// Every field.
    public init(sessionID: String, board: String, samples: Int) {
        self.sessionID = sessionID
        self.board = board
        self.samples = samples
    }
}

extension SessionController {
    /// The revisions finished since the last call, in the order they finished.
    public func takeRevisions() -> [SessionRevision] {
        defer { revisionsFinished.removeAll() }
        return revisionsFinished
    }

    /// A correction chunk was sealed: counted as a revision when its session's survey is in.
    func noteRevision(_ chunk: ChunkToSeal) {
        guard !awaitingSurvey.contains(chunk.sessionID) else { return }
        revisionsUnderway[SessionBoard(sessionID: chunk.sessionID, board: chunk.board), default: 0] += chunk.pointCount
    }

    /// `board`'s gap in `sessionID` is done: what it added after the survey is a revision.
    func revisionFinished(sessionID: String, board: String) {
        guard let samples = revisionsUnderway.removeValue(forKey: SessionBoard(sessionID: sessionID, board: board)) else { return }
        revisionsFinished.append(SessionRevision(sessionID: sessionID, board: board, samples: samples))
    }
}

/// A board in a session.
struct SessionBoard: Hashable {
    var sessionID: String
    var board: String
}
