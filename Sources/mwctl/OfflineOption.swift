import ArgumentParser
import ControlAPI
#if canImport(Glibc)
import Glibc
#endif

/// `--state-dir DIR` for `history` and `export`: read the buffer in DIR directly, read-only,
/// without the daemon (a stopped gateway, a copied SD card). Needs read access to
/// DIR/buffer.sqlite; without the option both commands ask the daemon over D-Bus.
///
/// The reading is done by `mwgated buffer ...` (the daemon's own queries, installed beside
/// mwctl), so mwctl carries neither the buffer's database code nor the Foundation and ICU data
/// it links (docs/operations.md, Size).
struct OfflineOption: ParsableArguments {
    @Option(name: .customLong("state-dir"),
            help: ArgumentHelp("Read the buffer in DIR directly instead of asking the daemon (offline).", valueName: "DIR"))
    var stateDirectory: String?

    /// The history from the buffer, or nil without `--state-dir`.
    func history(days: UInt32) throws -> [HistoryDayPayload]? {
        guard let stateDirectory else { return nil }
        let bytes = try Self.read(["history", "--days", String(days)], stateDirectory).mapError(\.exit).get()
        return try Self.decode([HistoryDayPayload].self, bytes, "history")
    }

    /// The sessions from the buffer, newest first, or nil without `--state-dir`.
    func sessions() throws -> [SessionListingPayload]? {
        guard let stateDirectory else { return nil }
        return try Self.decode([SessionListingPayload].self, Self.read(["sessions"], stateDirectory).mapError(\.exit).get(), "sessions")
    }

    /// One session's export from the buffer, or nil without `--state-dir`.
    func export(sessionID: String, format: String) throws -> [UInt8]? {
        guard let stateDirectory else { return nil }
        return try Self.read(["export", sessionID, "--format", format], stateDirectory).mapError(\.exit).get()
    }

    /// A session's picture page for `history --html`, or why it has none (nothing printed).
    func page(sessionID: String, stateDirectory: String) -> Result<[UInt8], HistoryPages.ExportRefusal> {
        Self.read(["export", sessionID, "--format", "html"], stateDirectory).mapError { .init(reason: $0.message) }
    }

    /// Why mwgated read nothing: its one-line message and its exit status, mwctl's codes.
    struct ReadFailure: Error {
        var message: String
        var code: ExitCode

        /// Prints the message as mwctl's error and returns the exit code to throw.
        var exit: ExitCode { MWCtlExit.fail(message, code) }
    }

    /// mwgated's answer, or its error (same message, same exit status).
    private static func read(_ arguments: [String], _ stateDirectory: String) -> Result<[UInt8], ReadFailure> {
        let reader = mwgatedPath()
        let run: ChildRun
        do {
            run = try ChildRun.run(reader, ["buffer"] + arguments + ["--state-dir", stateDirectory])
        } catch {
            return .failure(ReadFailure(message: "cannot run \(reader) to read the buffer (--state-dir): "
                                        + "\(String(cString: strerror(error.code))); it comes with mwctl in the mwgate package",
                                        code: MWCtlExit.failed))
        }
        guard run.status != 0 else { return .success(run.output) }
        var message = String(decoding: run.errors, as: UTF8.self)
        while message.last?.isNewline == true { message.removeLast() }
        let prefix = "mwgated: error: "
        if message.hasPrefix(prefix) { message.removeFirst(prefix.count) }
        if message.isEmpty { message = "\(reader) failed with status \(run.status)" }
        let code = [MWCtlExit.usage, MWCtlExit.notFound].first { $0.rawValue == run.status } ?? MWCtlExit.failed
        return .failure(ReadFailure(message: message, code: code))
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], _ what: String) throws -> T {
        do { return try ControlJSON.decode(type, from: String(decoding: bytes, as: UTF8.self)) } catch {
            throw MWCtlExit.fail("unexpected \(what) from mwgated: \(error) (is mwctl the same version as mwgated?)", MWCtlExit.failed)
        }
    }

    /// mwgated beside this mwctl (both in /usr/bin, or in the same build directory), else by
    /// that name on PATH.
    static func mwgatedPath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if count > 0 {
            let own = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = own.lastIndex(of: "/") {
                let beside = String(own[...slash]) + "mwgated"
                if access(beside, X_OK) == 0 { return beside }
            }
        }
        let searchPath = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for directory in searchPath.split(separator: ":") where !directory.isEmpty {
            let candidate = String(directory) + "/mwgated"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return "/usr/bin/mwgated"
    }
}
