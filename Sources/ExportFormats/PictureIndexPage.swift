/// The index that `mwctl history --html DIR` writes beside the session pages: the days of the
/// history, newest first, each with its line of totals and a link to each session's page.
/// Links are relative, so the directory can be copied or zipped as a whole.
public struct PictureIndexPage: Sendable {
    /// One session on the index.
    public struct Session: Sendable {
        public var sessionID: String
        /// Epoch milliseconds.
        public var startedAt: Double
        public var state: String
        public var points: Int
        /// The page's file name inside the directory; nil when no page could be written (the
        /// reason is in `note`).
        public var file: String?
        public var note: String?

        /// A session.
        public init(sessionID: String, startedAt: Double, state: String, points: Int, file: String?, note: String? = nil) {
            self.sessionID = sessionID
            self.startedAt = startedAt
            self.state = state
            self.points = points
            self.file = file
            self.note = note
        }
    }

    /// One day: its name, its totals as the history prints them, and its sessions.
    public struct Day: Sendable {
        public var day: String
        public var totals: String
        public var sessions: [Session]

        /// A day.
        public init(day: String, totals: String, sessions: [Session]) {
            self.day = day
            self.totals = totals
            self.sessions = sessions
        }
    }

    public var days: [Day]

    /// An index.
    public init(days: [Day]) { self.days = days }

    /// The page's file name for a session.
    public static func fileName(sessionID: String) -> String {
        "session-" + String(sessionID.unicodeScalars.map { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" ? Character($0) : "_" })
            + ".html"
    }

    /// The index as HTML.
    public var html: String {
        var out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Walking sessions (mwgate)</title><style>"
            + "body{font-family:sans-serif;margin:24px;color:#222}h2{font-size:16px;margin:18px 0 4px}.totals{color:#555;margin:0 0 6px}"
            + "td{padding:2px 16px 2px 0}.note{color:#a01010}</style></head><body><h1>Walking sessions</h1>\n"
        if days.isEmpty { out += "<p>No sessions in these days.</p>\n" }
        for day in days {
            out += "<h2>\(PictureText.escaped(day.day))</h2><p class=\"totals\">\(PictureText.escaped(day.totals))</p><table>"
            for s in day.sessions {
                let name = PictureText.escaped(s.sessionID)
                out += "<tr><td>" + PictureText.timeOfDay(s.startedAt) + " UTC</td><td>"
                    + (s.file.map { "<a href=\"\(PictureText.escaped($0))\">\(name)</a>" } ?? name) + "</td><td>"
                    + PictureText.escaped(s.state) + "</td><td>" + PictureText.number(Double(s.points)) + " points</td>"
                    + (s.note.map { "<td class=\"note\">\(PictureText.escaped($0))</td>" } ?? "<td></td>") + "</tr>"
            }
            out += "</table>\n"
        }
        return out + "</body></html>\n"
    }
}
