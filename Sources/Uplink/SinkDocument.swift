import Recording

/// One document on its way upstream. Its `name` is fixed when the chunk is sealed (or the
/// survey submitted) and is the idempotency key in every sink.
public enum SinkDocument: Hashable, Sendable {
    case realtimeData(RealtimeDataDocument)
    case records(RecordsDocument)

    /// Collection: `realtime_data` or `records`.
    public var collection: String {
        switch self {
        case .realtimeData: RealtimeDataDocument.collection
        case .records: RecordsDocument.collection
        }
    }

    /// Document ID within the collection.
    public var name: String {
        switch self {
        case let .realtimeData(d): d.name
        case let .records(d): d.name
        }
    }

    /// Whether the document replaces one stored under its name (a revised records document or
    /// chunk) rather than being created once.
    public var replacesStored: Bool {
        switch self {
        case let .realtimeData(d): d.revised
        case let .records(d): d.revision > 0
        }
    }

    /// Session the document belongs to.
    public var sessionID: String {
        switch self {
        case let .realtimeData(d): d.sessionID
        case let .records(d): d.sessionID
        }
    }

    /// The fields in Firestore's type system.
    public var fields: [(String, FirestoreValue)] {
        switch self {
        case let .realtimeData(d): d.fields
        case let .records(d): d.fields
        }
    }

    /// Size by Firestore's rules.
    public var firestoreSize: Int {
        switch self {
        case let .realtimeData(d): d.firestoreSize
        case let .records(d): d.firestoreSize
        }
    }

    /// Plain JSON of the fields (what the directory and PostgreSQL sinks store).
    public var jsonText: String {
        switch self {
        case let .realtimeData(d): d.jsonText
        case let .records(d): d.jsonText
        }
    }
}
