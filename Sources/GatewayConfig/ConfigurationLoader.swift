import Basics
import Foundation
import GNSS
import MetaWear

/// Reads `mwgated.toml` into a `GatewayConfiguration`: defaults for everything absent,
/// every problem collected with file, line and key, unknown keys refused with a did-you-mean.
public enum ConfigurationLoader {
    /// Loads `path`, or the default file in `paths.configurationDirectory` when `path` is nil.
    /// A missing default file means "all defaults"; a missing explicit file is an error.
    public static func load(
        path: String? = nil, paths: ServicePaths = ServicePaths(),
        fileExists: (String) -> Bool = ServicePaths.fileExists
    ) throws(ConfigurationErrors) -> GatewayConfiguration {
        let file = path ?? paths.configurationFile
        guard FileManager.default.fileExists(atPath: file) else {
            if path == nil { return .defaults(paths: paths, fileExists: fileExists) }
            throw ConfigurationErrors([ConfigurationIssue(file: file, line: 0, key: "", message: "no such file")])
        }
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ConfigurationErrors([ConfigurationIssue(
                file: file, line: 0, key: "", message: "cannot be read as UTF-8 text: \(error.localizedDescription)")])
        }
        return try parse(text, file: file, paths: paths, fileExists: fileExists)
    }

    /// Parses configuration text; `file` names it in issues.
    public static func parse(
        _ text: String, file: String, paths: ServicePaths = ServicePaths(),
        fileExists: (String) -> Bool = ServicePaths.fileExists
    ) throws(ConfigurationErrors) -> GatewayConfiguration {
        let root: TOMLTable
        do {
            root = try TOMLParser.parse(text)
        } catch {
            throw ConfigurationErrors(error.errors.map {
                ConfigurationIssue(file: file, line: $0.position.line, key: "", message: "\($0.message) (column \($0.position.column))")
            })
        }
        var config = GatewayConfiguration.defaults(paths: paths, fileExists: fileExists)
        var top = TableReader(file: file, prefix: "", table: root, line: 0)
        var issues: [ConfigurationIssue] = []

        if let (table, line) = top.table("boards") { issues += readBoards(table, line: line, file: file, into: &config.boards) }
        if let (table, line) = top.table("gnss") { issues += readGNSS(table, line: line, file: file, into: &config.gnss) }
        if let (table, line) = top.table("session") { issues += readSession(table, line: line, file: file, into: &config.session) }
        if let (table, line) = top.table("hazards") { issues += readHazards(table, line: line, file: file, into: &config.hazards) }
        if let (table, line) = top.table("buffer") { issues += readBuffer(table, line: line, file: file, into: &config.buffer) }
        if let (table, line) = top.table("sink") { issues += readSink(table, line: line, file: file, into: &config.sink) }
        if let (table, line) = top.table("log") { issues += readLog(table, line: line, file: file, into: &config.log) }
        issues += top.finish()
        if issues.isEmpty, let issue = flashRefusal(config, root: root, file: file) { issues.append(issue) }
        if issues.isEmpty, let issue = alwaysModeRefusal(config, root: root, file: file) { issues.append(issue) }
        guard issues.isEmpty else { throw ConfigurationErrors(issues) }
        return config
    }

    // MARK: Sections

    static func readBoards(_ table: TOMLTable, line: Int, file: String, into boards: inout GatewayConfiguration.Boards) -> [ConfigurationIssue] {
        var reader = TableReader(file: file, prefix: "boards", table: table, line: line)
        let addresses = reader.strings("addresses").map { checkAddresses($0, key: "addresses", reader: &reader) }
        let allow = reader.strings("allow").map { checkAddresses($0, key: "allow", reader: &reader) }
        if let addresses, !addresses.isEmpty {
            if let allow, !allow.isEmpty {
                reader.issue("allow", "only applies to discovery; with 'addresses' set, exactly those boards are used (remove one of the two)")
            }
            boards.selection = .fixed(addresses)
        } else {
            boards.selection = .discover(allow: allow ?? [])
        }

        var gyroRate = boards.gyro.rate
        if let hertz = reader.number("gyro_rate") {
            if let rate = GyroRate.allCases.first(where: { $0.hertz == hertz }) { gyroRate = rate } else {
                reader.issue("gyro_rate", "\(format(hertz)) Hz is not a gyro rate; use one of "
                    + GyroRate.allCases.map { String($0.rawValue) }.joined(separator: ", "))
            }
        }
        var gyroRange = boards.gyro.range
        if let value = reader.integer("gyro_range") {
            if let range = GyroRange(rawValue: Int(clamping: value)) { gyroRange = range } else {
                reader.issue("gyro_range", "±\(value) °/s is not a gyro range; use one of "
                    + GyroRange.allCases.map { String($0.rawValue) }.joined(separator: ", "))
            }
        }
        boards.gyro = GyroConfiguration(rate: gyroRate, range: gyroRange)

        let enabled = reader.boolean("accelerometer") ?? false
        var accelRate = AccelerometerRate.hz100
        var accelRange = AccelerometerRange.g16
        let rateGiven = reader.number("accelerometer_rate")
        let rangeGiven = reader.integer("accelerometer_range")
        if let hertz = rateGiven {
            if let rate = AccelerometerRate.allCases.first(where: { $0.hertz == hertz }) { accelRate = rate } else {
                reader.issue("accelerometer_rate", "\(format(hertz)) Hz is not an accelerometer rate; use one of "
                    + AccelerometerRate.allCases.map { format($0.hertz) }.joined(separator: ", "))
            }
        }
        if let value = rangeGiven {
            if let range = AccelerometerRange(rawValue: Int(clamping: value)) { accelRange = range } else {
                reader.issue("accelerometer_range", "±\(value) g is not an accelerometer range; use one of "
                    + AccelerometerRange.allCases.map { String($0.rawValue) }.joined(separator: ", "))
            }
        }
        if !enabled, rateGiven != nil || rangeGiven != nil {
            reader.issue(rateGiven != nil ? "accelerometer_rate" : "accelerometer_range",
                "has no effect while accelerometer = false; set accelerometer = true or remove it")
        }
        boards.accelerometer = enabled ? AccelerometerConfiguration(rate: accelRate, range: accelRange) : nil

        if let text = reader.string("sample_mode") {
            if let mode = SampleMode(rawValue: text) { boards.sampleMode = mode } else {
                reader.issue("sample_mode", "'\(text)' is not a sample mode; use \"single\" or \"packed\" (3 samples per notification)")
            }
        }
        if let backfill = reader.boolean("backfill") { boards.backfill = backfill }
        if let text = reader.string("notifications") {
            if let notifications = GatewayConfiguration.Boards.Notifications(rawValue: text) { boards.notifications = notifications } else {
                reader.issue("notifications", "'\(text)' is not a notification path; use "
                    + GatewayConfiguration.Boards.Notifications.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))
            }
        }
        // Only a combination of valid values is worth a link-budget verdict.
        if reader.issues.isEmpty { do {
            _ = try boards.streaming()
        } catch {
            let key = table["accelerometer_rate"] != nil && enabled ? "accelerometer_rate" : "gyro_rate"
            if case .exceedsLinkBudget(let rate, let limit) = error {
                let beyond = [boards.gyro.rate.hertz, boards.accelerometer?.rate.hertz ?? 0]
                    .contains(where: StreamingConfiguration.isBeyondTheLink(hertz:))
                reader.issue(key, line: table[key]?.keyPosition.line ?? table["sample_mode"]?.keyPosition.line,
                    "\(format(rate)) notifications/s is more than one BLE link carries (\(format(limit))); "
                    + (beyond ? "set backfill = true to record it in the board's flash and download it, or lower the rate"
                        : "lower the rate" + (boards.sampleMode == .single ? " or set sample_mode = \"packed\"" : "")))
            } else {
                reader.issue(key, "\(error)")
            }
        } }
        return reader.finish()
    }

    /// A session length at a logged rate that no MetaWear's documented flash holds (the
    /// largest, a MetaMotion S, 66,781,184 entries): refused here; one that a smaller flash
    /// cannot hold is refused per board when a session starts.
    static func flashRefusal(_ config: GatewayConfiguration, root: TOMLTable, file: String) -> ConfigurationIssue? {
        guard let seconds = config.session.maxDuration, let streaming = try? config.boards.streaming(),
              !streaming.logged.isEmpty else { return nil }
        let largest = BoardModel.allCases.compactMap { model in LoggingCapabilities.documentedCapacity(model).map { (model, $0) } }
            .max { $0.1 < $1.1 }
        guard let (model, capacity) = largest,
              let refusal = LogBudget(capacityEntries: capacity, rates: streaming.loggedRates)
                .refusal(sessionSeconds: seconds, model: model.rawValue) else { return nil }
        var line = 0
        if case .table(let session)? = root["session"]?.value { line = session["max_duration"]?.keyPosition.line ?? 0 }
        return ConfigurationIssue(file: file, line: line, key: "session.max_duration", message: refusal)
    }

    /// `mode = "always"` at a logged rate: an always-mode session starts on the first streamed
    /// sample, and a logged board streams none, so the gateway would never record. Refused
    /// here rather than left to fail silently in the field.
    static func alwaysModeRefusal(_ config: GatewayConfiguration, root: TOMLTable, file: String) -> ConfigurationIssue? {
        guard config.session.mode == .always, let streaming = try? config.boards.streaming(),
              !streaming.logged.isEmpty else { return nil }
        let rates = [("gyro_rate", config.boards.gyro.rate.hertz), ("accelerometer_rate", config.boards.accelerometer?.rate.hertz)]
            .compactMap { key, hertz in hertz.map { (key, $0) } }
            .filter { StreamingConfiguration.isBeyondTheLink(hertz: $0.1) }
        let named = rates.map { "boards.\($0.0) = \(format($0.1))" }.joined(separator: ", ")
        var line = 0
        if case .table(let session)? = root["session"]?.value { line = session["mode"]?.keyPosition.line ?? 0 }
        return ConfigurationIssue(file: file, line: line, key: "session.mode",
            message: "\"always\" starts a session on the first streamed sample, and with \(named) and backfill = true the boards "
                + "log to flash and stream nothing, so no session would start; use mode = \"manual\" (start and stop with "
                + "mwctl or a board's button), or a rate below \(format(StreamingConfiguration.loggedRateFloor)) Hz")
    }

    static func checkAddresses(_ values: [String], key: String, reader: inout TableReader) -> [String] {
        var out: [String] = []
        for value in values {
            let upper = value.uppercased()
            let parts = upper.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) }) else {
                reader.issue(key, "'\(value)' is not a Bluetooth address; write it as AA:BB:CC:DD:EE:FF")
                continue
            }
            if out.contains(upper) {
                reader.issue(key, "\(upper) is listed twice")
                continue
            }
            out.append(upper)
        }
        return out
    }

    static func readGNSS(_ table: TOMLTable, line: Int, file: String, into gnss: inout GatewayConfiguration.GNSS) -> [ConfigurationIssue] {
        var reader = TableReader(file: file, prefix: "gnss", table: table, line: line)
        if let text = reader.string("source") {
            if text == "none" {
                gnss.source = nil
            } else {
                do {
                    gnss.source = try GNSSSourceSpec(parsing: text)
                } catch {
                    reader.issue("source", "\(error.message); or \"none\" for no receiver")
                }
            }
        }
        if let accept = reader.boolean("accept_dead_reckoning") { gnss.acceptDeadReckoning = accept }
        return reader.finish()
    }

    static func readSession(_ table: TOMLTable, line: Int, file: String, into session: inout GatewayConfiguration.Session) -> [ConfigurationIssue] {
        var reader = TableReader(file: file, prefix: "session", table: table, line: line)
        if let text = reader.string("mode") {
            if let mode = GatewayConfiguration.Session.Mode(rawValue: text) { session.mode = mode } else {
                reader.issue("mode", "'\(text)' is not a session mode; use \"manual\" or \"always\"")
            }
        }
        if let toggles = reader.boolean("button_toggles") { session.buttonToggles = toggles }
        if let stream = reader.boolean("stream_between_sessions") { session.streamBetweenSessions = stream }
        if let node = reader.node("max_duration") {
            let seconds: Double? = switch node.value {
            case .integer(let seconds) where seconds > 0: Double(seconds)
            case .string(let text): DurationText.parse(text)
            default: nil
            }
            if let seconds { session.maxDuration = seconds } else {
                reader.issue("max_duration", "expected a length of time: seconds (3600) or a string such as \"30 min\", \"2 h\", \"1 h 30 min\"")
            }
        }
        return reader.finish()
    }

    static func readLog(_ table: TOMLTable, line: Int, file: String, into log: inout GatewayConfiguration.Log) -> [ConfigurationIssue] {
        var reader = TableReader(file: file, prefix: "log", table: table, line: line)
        if let text = reader.string("level") {
            if let level = GatewayConfiguration.Log.Level(rawValue: text) { log.level = level } else {
                let allowed = GatewayConfiguration.Log.Level.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                reader.issue("level", "'\(text)' is not a log level; use one of \(allowed)")
            }
        }
        return reader.finish()
    }

    static func readHazards(_ table: TOMLTable, line: Int, file: String, into hazards: inout GatewayConfiguration.Hazards) -> [ConfigurationIssue] {
        var reader = TableReader(file: file, prefix: "hazards", table: table, line: line)
        if let names = reader.strings("names") {
            var seen: [String] = []
            for name in names {
                let valid = (1...32).contains(name.count)
                    && name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
                if !valid {
                    reader.issue("names", "'\(name)' is not a hazard name; use 1 to 32 of a-z, 0-9 and _")
                } else if seen.contains(name) {
                    reader.issue("names", "'\(name)' is listed twice")
                } else {
                    seen.append(name)
                }
            }
            if names.isEmpty { reader.issue("names", "the catalogue needs at least one hazard") }
            hazards.names = seen
        }
        if let scale = reader.integer("intensity_scale") {
            let range = GatewayConfiguration.Hazards.intensityScaleRange
            if range.contains(Int(clamping: scale)) { hazards.intensityScale = Int(scale) } else {
                reader.issue("intensity_scale", "\(scale) is out of range; intensities run 1…N with N from \(range.lowerBound) to \(range.upperBound)")
            }
        }
        return reader.finish()
    }

    static func readBuffer(_ table: TOMLTable, line: Int, file: String, into buffer: inout GatewayConfiguration.BufferLimits) -> [ConfigurationIssue] {
        var reader = TableReader(file: file, prefix: "buffer", table: table, line: line)
        let minimumBudget: Int64 = 16 << 20
        if let budget = reader.byteSize("budget") {
            if budget >= minimumBudget { buffer.budget.maxBytes = budget } else {
                reader.issue("budget", "\(ByteSize.format(budget)) is too small to hold a session; use at least \(ByteSize.format(minimumBudget))")
            }
        }
        if let floor = reader.byteSize("free_space_floor") {
            if floor >= 0 { buffer.budget.minFreeBytes = floor } else {
                reader.issue("free_space_floor", "must not be negative")
            }
        }
        if let days = reader.number("retention_days") {
            if days >= 0, days <= 3650 { buffer.retentionDays = days } else {
                reader.issue("retention_days", "\(format(days)) is out of range; use 0 (delete once synced) to 3650")
            }
        }
        return reader.finish()
    }

    static func readSink(_ table: TOMLTable, line: Int, file: String, into sink: inout GatewayConfiguration.Sink) -> [ConfigurationIssue] {
        var reader = TableReader(file: file, prefix: "sink", table: table, line: line)
        let type = reader.string("type") ?? "directory"
        let kinds = ["directory", "firestore", "postgres"]
        if !kinds.contains(type) {
            let hint = Suggestion.closest(to: type, in: kinds).map { "; did you mean \"\($0)\"?" } ?? ""
            reader.issue("type", "'\(type)' is not a sink type; use \"directory\", \"firestore\" or \"postgres\"\(hint)")
        }
        if let rate = reader.number("max_requests_per_second") {
            let range = GatewayConfiguration.Sink.requestsPerSecondRange
            if range.contains(rate) { sink.maxRequestsPerSecond = rate } else {
                reader.issue("max_requests_per_second", "\(format(rate)) is out of range; use \(format(range.lowerBound)) to \(format(range.upperBound))")
            }
        }
        if let count = reader.integer("max_documents_per_request") {
            let range = GatewayConfiguration.Sink.documentsPerRequestRange
            if range.contains(Int(clamping: count)) { sink.maxDocumentsPerRequest = Int(count) } else {
                reader.issue("max_documents_per_request", "\(count) is out of range; use \(range.lowerBound) to \(range.upperBound)")
            }
        }
        var sections: [String: (TOMLTable, Int)] = [:]
        for kind in kinds { sections[kind] = reader.table(kind) }
        for (kind, section) in sections where kind != type && kinds.contains(type) {
            reader.issue(kind, line: section.1, "is set but sink.type is \"\(type)\"; set type = \"\(kind)\" or remove [sink.\(kind)]")
        }
        let section = sections[type]
        var sub = TableReader(file: file, prefix: "sink.\(type)", table: section?.0 ?? TOMLTable(), line: section?.1 ?? line)
        switch type {
        case "directory":
            if let path = sub.string("path") {
                if path.hasPrefix("/") { sink.kind = .directory(path: path) } else {
                    sub.issue("path", "'\(path)' must be an absolute path")
                }
            }
        case "firestore":
            let project = sub.string("project_id")
            if project == nil { sub.issue("project_id", "required for the firestore sink (the Google Cloud project id)") }
            var firestore = GatewayConfiguration.Sink.Firestore(projectID: project ?? "")
            if let project, !isFirestoreProjectID(project) {
                sub.issue("project_id", "'\(project)' is not a project id (6 to 30 of a-z, 0-9 and -, starting with a letter)")
            }
            if let database = sub.string("database") {
                if database == "(default)" || isFirestoreDatabaseID(database) { firestore.database = database } else {
                    sub.issue("database", "'\(database)' is not a database id; use \"(default)\" or 4 to 63 of a-z, 0-9 and -")
                }
            }
            if let host = sub.string("emulator_host") {
                if host.isEmpty { firestore.emulatorHost = nil } else if isHostPort(host) { firestore.emulatorHost = host } else {
                    sub.issue("emulator_host", "'\(host)' is not HOST:PORT (e.g. \"127.0.0.1:8080\")")
                }
            }
            if let credential = sub.string("credential") {
                if isCredentialName(credential) { firestore.credential = credential } else {
                    sub.issue("credential", "'\(credential)' is not a credential name (a file name, as in LoadCredential=NAME:PATH)")
                }
            }
            sink.kind = .firestore(firestore)
        case "postgres":
            let host = sub.string("host")
            let user = sub.string("user")
            let database = sub.string("database")
            for (key, value) in [("host", host), ("user", user), ("database", database)] where value?.isEmpty ?? true {
                sub.issue(key, value == nil ? "required for the postgres sink" : "must not be empty")
            }
            var postgres = GatewayConfiguration.Sink.Postgres(host: host ?? "", user: user ?? "", database: database ?? "")
            if let port = sub.integer("port") {
                if (1...65535).contains(port) { postgres.port = Int(port) } else { sub.issue("port", "\(port) is not a port (1-65535)") }
            }
            if let mode = sub.string("sslmode") {
                if let value = GatewayConfiguration.Sink.Postgres.SSLMode(rawValue: mode) { postgres.sslMode = value } else {
                    sub.issue("sslmode", "'\(mode)' is not an sslmode; use one of "
                        + GatewayConfiguration.Sink.Postgres.SSLMode.allCases.map(\.rawValue).joined(separator: ", "))
                }
            }
            if let credential = sub.string("password_credential") {
                if isCredentialName(credential) { postgres.passwordCredential = credential } else {
                    sub.issue("password_credential", "'\(credential)' is not a credential name (a file name, as in LoadCredential=NAME:PATH)")
                }
            }
            sink.kind = .postgres(postgres)
        default:
            break
        }
        return reader.finish() + (kinds.contains(type) ? sub.finish() : [])
    }

    // MARK: Helpers

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    static func isFirestoreProjectID(_ id: String) -> Bool {
        (6...30).contains(id.count) && id.first.map { $0.isLetter && $0.isLowercase } == true
            && id.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
            && !id.hasSuffix("-")
    }

    static func isFirestoreDatabaseID(_ id: String) -> Bool {
        (4...63).contains(id.count) && id.first.map { $0.isLetter && $0.isLowercase } == true
            && id.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
    }

    static func isHostPort(_ text: String) -> Bool {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else { return false }
        return colon > text.startIndex && !text[..<colon].contains(" ")
    }

    static func isCredentialName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && name.count <= 255
    }
}
