/// Export formats of `mwctl export`.
public enum ExportFormat: String, Sendable, CaseIterable {
    case json, csv, geojson, gpx
    /// A self-contained page with the session's pictures (`SessionPicture.html`).
    case html
    /// The same pictures as one standalone SVG image (`SessionPicture.svg`).
    case svg

    /// The formats as a user reads them in an error: "json, csv, …, html or svg".
    public static var spokenList: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
    }
}
