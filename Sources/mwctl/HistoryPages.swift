import ArgumentParser
import ExportFormats
import ControlAPI
import DBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `mwctl history --html DIR`: the picture page of every session in the days shown
/// (`session-ID.html`, as `mwctl export --format html` writes it) and `index.html` linking
/// them by day, so an operator hands a researcher one directory to open in a browser.
/// Pages of sessions whose survey is submitted do not change any more and are not rendered
/// again; recording or unanswered sessions are rewritten on every run.
struct HistoryPages {
    /// A session as both sources list it; `startedAt` in epoch seconds.
    struct Listed {
        var sessionID: String
        var startedAt: Double
        var state: String
        var points: Int
        /// The history day the gateway filed the session under, when the source says; else the
        /// day of `startedAt` in this machine's time zone.
        var day: String? = nil

        /// A session as the daemon (or `mwgated buffer`) lists it.
        init(_ listing: SessionListingPayload) {
            self.init(sessionID: listing.sessionID, startedAt: listing.startedAt, state: listing.state, points: listing.points,
                      day: listing.day)
        }

        init(sessionID: String, startedAt: Double, state: String, points: Int, day: String? = nil) {
            self.sessionID = sessionID
            self.startedAt = startedAt
            self.state = state
            self.points = points
            self.day = day
        }
    }

    var directory: String
    var history: [HistoryDayPayload]

    /// Lists the sessions, renders the missing pages through `render` (nil bytes and a reason
    /// when a session's data is gone) and writes the index; the index's path and the counts.
    func write(sessions: [Listed], render: (String) async throws -> Result<[UInt8], ExportRefusal>) async throws
        -> (index: String, sessions: Int, written: Int)
    {
        do { try OutputFile.createDirectory(directory) } catch {
            throw MWCtlExit.fail("cannot create \(directory): \(error)", MWCtlExit.failed)
        }
        let shownDays = Set(history.map(\.day))
        var byDay: [String: [PictureIndexPage.Session]] = [:]
        var written = 0, listed = 0
        for s in sessions.sorted(by: { $0.startedAt < $1.startedAt }) {
            let day = s.day ?? Format.day(s.startedAt)
            guard shownDays.contains(day) else { continue }
            listed += 1
            let file = PictureIndexPage.fileName(sessionID: s.sessionID)
            let path = directory + "/" + file
            var entry = PictureIndexPage.Session(sessionID: s.sessionID, startedAt: s.startedAt * 1000, state: s.state,
                                                 points: s.points, file: file)
            if s.state != "submitted" || !OutputFile.exists(path) {
                switch try await render(s.sessionID) {
                case let .success(bytes):
                    try Self.write(bytes, to: path)
                    written += 1
                case let .failure(refusal):
                    entry.file = nil
                    entry.note = refusal.reason
                    OutputFile.remove(path)
                }
            }
            byDay[day, default: []].append(entry)
        }
        let days = history.filter { $0.sessions > 0 || byDay[$0.day] != nil }.map { d in
            PictureIndexPage.Day(day: d.day, totals: HistoryCommand.totals(d), sessions: byDay[d.day] ?? [])
        }
        let index = directory + "/index.html"
        try Self.write(Array(PictureIndexPage(days: days).html.utf8), to: index)
        return (index, listed, written)
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        do { try OutputFile.write(bytes, to: path) } catch {
            throw MWCtlExit.fail("cannot write \(path): \(error)", MWCtlExit.failed)
        }
    }

    /// Why a session has no page (its data was evicted or expired, or it was deleted meanwhile).
    struct ExportRefusal: Error {
        var reason: String
    }
}

extension HistoryCommand {
    /// Writes the pages for the days shown, from the buffer directly or through the daemon.
    func writePages(to directory: String, history: [HistoryDayPayload]) async throws {
        let pages = HistoryPages(directory: directory, history: history)
        let result: (index: String, sessions: Int, written: Int)
        if let stateDirectory = offline.stateDirectory, let listed = try offline.sessions() {
            let sessions = listed.map(HistoryPages.Listed.init)
            result = try await pages.write(sessions: sessions) { offline.page(sessionID: $0, stateDirectory: stateDirectory) }
        } else {
            result = try await DaemonAccess.run { client in
                let sessions = try await client.sessions(limit: 10_000).map(HistoryPages.Listed.init)
                return try await pages.write(sessions: sessions) { id in
                    do { return .success(try await client.export(sessionID: id, format: "html")) } catch let error as DBusError
                        where error.name == GatewayControl.ErrorName.unknownSession {
                        return .failure(.init(reason: error.message))
                    }
                }
            }
        }
        let line = "pictures: \(result.index) (\(result.sessions) session page(s), \(result.written) written now)"
        // With --json the summary goes to stderr, so stdout stays one JSON document.
        if output.json { StandardStream.error.write(line + "\n") } else { emitLine(line) }
    }
}
