/// A strict reader for the TOML subset mwgate's configuration uses: comments, `[tables]`,
/// `[[arrays.of.tables]]`, bare/quoted/dotted keys, basic and literal strings, integers
/// (decimal, `_` separators), floats, booleans, arrays and inline tables. Multi-line strings
/// and dates are refused with a clear message rather than half-supported. Every error carries
/// line and column; after an error the reader skips to the next line and goes on, so one run
/// reports every broken line.
public struct TOMLParser {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var line = 1
    private var column = 1
    private var errors: [TOMLSyntaxError] = []

    private var root = TOMLTable()
    /// Path of the table the following key/values go into.
    private var currentPath: [PathStep] = []
    /// Tables created by a `[header]` (redefining one is an error), with their lines.
    private var explicitTables: [String: Int] = [:]
    /// Tables or values defined by key/value lines (dotted keys and inline tables are closed).
    private var definedKeys: [String: Int] = [:]

    /// A step into the tree: a key, and for arrays of tables, their last element.
    private enum PathStep: Equatable {
        case key(String)
        case lastElement(String)
    }

    /// Parses `text`; throws every syntax error found.
    public static func parse(_ text: String) throws(TOMLParseErrors) -> TOMLTable {
        var parser = TOMLParser(text: text)
        parser.parseDocument()
        guard parser.errors.isEmpty else { throw TOMLParseErrors(errors: parser.errors) }
        return parser.root
    }

    init(text: String) {
        scalars = Array(text.unicodeScalars)
    }

    // MARK: Cursor

    private var atEnd: Bool { index >= scalars.count }
    private var current: Unicode.Scalar? { atEnd ? nil : scalars[index] }
    private func peek(_ offset: Int = 1) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }
    private var position: TOMLPosition { TOMLPosition(line: line, column: column) }

    private mutating func advance() {
        guard let scalar = current else { return }
        index += 1
        if scalar == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
    }

    private mutating func skipSpaces() {
        while let scalar = current, scalar == " " || scalar == "\t" { advance() }
    }

    private mutating func skipComment() {
        guard current == "#" else { return }
        while let scalar = current, scalar != "\n" { advance() }
    }

    /// Whitespace, newlines and comments (inside arrays).
    private mutating func skipBlank() {
        while let scalar = current {
            if scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" { advance() }
            else if scalar == "#" { skipComment() }
            else { break }
        }
    }

    private mutating func skipToNextLine() {
        while let scalar = current, scalar != "\n" { advance() }
        advance()
    }

    private mutating func expectEndOfLine() throws(TOMLSyntaxError) {
        skipSpaces()
        skipComment()
        if current == "\r" { advance() }
        guard atEnd || current == "\n" else {
            throw TOMLSyntaxError(position: position, message: "expected the end of the line, found '\(current.map(String.init) ?? "")'")
        }
        advance()
    }

    // MARK: Document

    private mutating func parseDocument() {
        while !atEnd {
            skipBlank()
            guard !atEnd else { break }
            let startLine = line
            do {
                if current == "[" {
                    try parseHeader()
                } else {
                    try parseKeyValueLine()
                }
            } catch {
                errors.append(error)
                // Skip the rest of the broken line (unless the error already moved past it).
                if line == startLine || current != nil && column > 1 { skipToNextLine() }
            }
        }
    }

    private mutating func parseHeader() throws(TOMLSyntaxError) {
        let start = position
        advance()
        let isArray = current == "["
        if isArray { advance() }
        skipSpaces()
        let keys = try parseKey()
        skipSpaces()
        guard current == "]" else { throw TOMLSyntaxError(position: position, message: "expected ']' to close the table header") }
        advance()
        if isArray {
            guard current == "]" else { throw TOMLSyntaxError(position: position, message: "expected ']]' to close the array-of-tables header") }
            advance()
        }
        try expectEndOfLine()
        let dotted = keys.map(\.0).joined(separator: ".")
        if isArray {
            try appendArrayTable(keys: keys.map(\.0), at: start)
        } else {
            if let previous = explicitTables[dotted] {
                throw TOMLSyntaxError(position: start, message: "table [\(dotted)] is already defined on line \(previous)")
            }
            if let previous = definedKeys[dotted] {
                throw TOMLSyntaxError(position: start, message: "[\(dotted)] was already defined by a key on line \(previous)")
            }
            explicitTables[dotted] = start.line
            currentPath = try resolveTablePath(keys.map(\.0), at: start, createLastAs: start)
        }
    }

    private mutating func parseKeyValueLine() throws(TOMLSyntaxError) {
        let keyStart = position
        let keys = try parseKey()
        skipSpaces()
        guard current == "=" else {
            throw TOMLSyntaxError(position: position, message: "expected '=' after key '\(keys.map(\.0).joined(separator: "."))'")
        }
        advance()
        skipSpaces()
        let node = try parseValue(keyPosition: keyStart)
        try expectEndOfLine()
        try insert(node, keys: keys.map(\.0), under: currentPath, at: keyStart)
    }

    // MARK: Tree building

    private func pathName(_ path: [PathStep]) -> String {
        path.map { step -> String in
            switch step {
            case .key(let key), .lastElement(let key): key
            }
        }.joined(separator: ".")
    }

    /// Walks/creates tables for a `[header]`, returning the path steps.
    private mutating func resolveTablePath(_ keys: [String], at start: TOMLPosition, createLastAs: TOMLPosition)
        throws(TOMLSyntaxError) -> [PathStep]
    {
        var path: [PathStep] = []
        for key in keys {
            let existing = try table(at: path, position: start)[key]
            switch existing?.value {
            case nil:
                try modifyTable(at: path, position: start) { table in
                    table.set(key, TOMLNode(value: .table(TOMLTable()), position: start, keyPosition: start))
                }
                path.append(.key(key))
            case .table?:
                path.append(.key(key))
            case .array(let items)? where items.last.map({ if case .table = $0.value { true } else { false } }) ?? false:
                path.append(.lastElement(key))
            case let other?:
                throw TOMLSyntaxError(
                    position: start, message: "'\(pathName(path + [.key(key)]))' is \(other.typeName), not a table")
            }
        }
        return path
    }

    private mutating func appendArrayTable(keys: [String], at start: TOMLPosition) throws(TOMLSyntaxError) {
        guard let last = keys.last else { return }
        let parent = try resolveTablePath(Array(keys.dropLast()), at: start, createLastAs: start)
        let existing = try table(at: parent, position: start)[last]
        var items: [TOMLNode] = []
        switch existing?.value {
        case nil: break
        case .array(let array)? where explicitTables[keys.joined(separator: ".") + "[]"] != nil:
            items = array
        case let other?:
            throw TOMLSyntaxError(position: start, message: "'\(keys.joined(separator: "."))' is already \(other.typeName); it cannot also be an array of tables")
        }
        explicitTables[keys.joined(separator: ".") + "[]"] = start.line
        items.append(TOMLNode(value: .table(TOMLTable()), position: start, keyPosition: start))
        try modifyTable(at: parent, position: start) { table in
            table.set(last, TOMLNode(value: .array(items), position: existing?.position ?? start, keyPosition: existing?.keyPosition ?? start))
        }
        currentPath = parent + [.lastElement(last)]
    }

    private mutating func insert(_ node: TOMLNode, keys: [String], under base: [PathStep], at start: TOMLPosition)
        throws(TOMLSyntaxError)
    {
        var path = base
        for key in keys.dropLast() {
            let full = pathName(path + [.key(key)])
            let existing = try table(at: path, position: start)[key]
            switch existing?.value {
            case nil:
                try modifyTable(at: path, position: start) { $0.set(key, TOMLNode(value: .table(TOMLTable()), position: start, keyPosition: start)) }
                definedKeys[full] = start.line
            case .table?:
                if explicitTables[full] != nil {
                    throw TOMLSyntaxError(position: start, message: "cannot add to table [\(full)] with a dotted key; write it under its header")
                }
            case let other?:
                throw TOMLSyntaxError(position: start, message: "'\(full)' is \(other.typeName), not a table")
            }
            path.append(.key(key))
        }
        guard let last = keys.last else { return }
        let full = pathName(path + [.key(last)])
        if let previous = try table(at: path, position: start)[last] {
            throw TOMLSyntaxError(
                position: start, message: "duplicate key '\(full)' (first defined on line \(previous.keyPosition.line))")
        }
        definedKeys[full] = start.line
        try modifyTable(at: path, position: start) { $0.set(last, node) }
    }

    private func table(at path: [PathStep], position: TOMLPosition) throws(TOMLSyntaxError) -> TOMLTable {
        var table = root
        for step in path {
            switch step {
            case .key(let key):
                guard case .table(let next)? = table[key]?.value else {
                    throw TOMLSyntaxError(position: position, message: "'\(key)' is not a table")
                }
                table = next
            case .lastElement(let key):
                guard case .array(let items)? = table[key]?.value, case .table(let next)? = items.last?.value else {
                    throw TOMLSyntaxError(position: position, message: "'\(key)' is not an array of tables")
                }
                table = next
            }
        }
        return table
    }

    private mutating func modifyTable(
        at path: [PathStep], position: TOMLPosition, _ body: (inout TOMLTable) -> Void
    ) throws(TOMLSyntaxError) {
        func modify(_ table: inout TOMLTable, _ steps: ArraySlice<PathStep>) -> Bool {
            guard let step = steps.first else {
                body(&table)
                return true
            }
            switch step {
            case .key(let key):
                guard var node = table[key], case .table(var inner) = node.value else { return false }
                guard modify(&inner, steps.dropFirst()) else { return false }
                node.value = .table(inner)
                table.set(key, node)
            case .lastElement(let key):
                guard var node = table[key], case .array(var items) = node.value, var element = items.last,
                    case .table(var inner) = element.value
                else { return false }
                guard modify(&inner, steps.dropFirst()) else { return false }
                element.value = .table(inner)
                items[items.count - 1] = element
                node.value = .array(items)
                table.set(key, node)
            }
            return true
        }
        guard modify(&root, path[...]) else {
            throw TOMLSyntaxError(position: position, message: "'\(pathName(path))' is not a table")
        }
    }

    // MARK: Keys

    private mutating func parseKey() throws(TOMLSyntaxError) -> [(String, TOMLPosition)] {
        var keys: [(String, TOMLPosition)] = []
        while true {
            skipSpaces()
            let start = position
            keys.append((try parseSimpleKey(), start))
            skipSpaces()
            guard current == "." else { break }
            advance()
        }
        return keys
    }

    private mutating func parseSimpleKey() throws(TOMLSyntaxError) -> String {
        switch current {
        case "\""?: return try parseBasicString()
        case "'"?: return try parseLiteralString()
        default:
            var key = ""
            while let scalar = current, Self.isBareKeyScalar(scalar) {
                key.unicodeScalars.append(scalar)
                advance()
            }
            guard !key.isEmpty else {
                throw TOMLSyntaxError(
                    position: position,
                    message: current.map { "expected a key, found '\($0)'" } ?? "expected a key at the end of the file")
            }
            return key
        }
    }

    private static func isBareKeyScalar(_ scalar: Unicode.Scalar) -> Bool {
        ("A"..."Z").contains(scalar) || ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar)
            || scalar == "_" || scalar == "-"
    }

    // MARK: Values

    private mutating func parseValue(keyPosition: TOMLPosition) throws(TOMLSyntaxError) -> TOMLNode {
        let start = position
        let value: TOMLValue
        switch current {
        case "\""?:
            if peek() == "\"" && peek(2) == "\"" {
                throw TOMLSyntaxError(position: start, message: "multi-line strings (\"\"\") are not supported; use one line with \\n escapes")
            }
            value = .string(try parseBasicString())
        case "'"?:
            if peek() == "'" && peek(2) == "'" {
                throw TOMLSyntaxError(position: start, message: "multi-line strings (''') are not supported")
            }
            value = .string(try parseLiteralString())
        case "["?: value = try parseArray()
        case "{"?: value = try parseInlineTable()
        case "t"?, "f"?:
            var word = ""
            while let scalar = current, ("a"..."z").contains(scalar) {
                word.unicodeScalars.append(scalar)
                advance()
            }
            guard word == "true" || word == "false" else {
                throw TOMLSyntaxError(position: start, message: "expected a value, found '\(word)' (strings need quotes)")
            }
            value = .boolean(word == "true")
        case nil, "\n"?, "#"?:
            throw TOMLSyntaxError(position: start, message: "missing value after '='")
        default:
            value = try parseNumber()
        }
        return TOMLNode(value: value, position: start, keyPosition: keyPosition)
    }

    private mutating func parseNumber() throws(TOMLSyntaxError) -> TOMLValue {
        let start = position
        var text = ""
        while let scalar = current, !(scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r"
            || scalar == "," || scalar == "]" || scalar == "}" || scalar == "#")
        {
            text.unicodeScalars.append(scalar)
            advance()
        }
        let bad = TOMLSyntaxError(position: start, message: "expected a value, found '\(text)' (strings need quotes)")
        guard let first = text.unicodeScalars.first, first == "+" || first == "-" || ("0"..."9").contains(first) else {
            throw bad
        }
        if text.contains(":") || (text.filter { $0 == "-" }.count >= 2 && !text.contains("e")) {
            throw TOMLSyntaxError(position: start, message: "dates and times are not supported here; '\(text)'")
        }
        if text.hasPrefix("0x") || text.hasPrefix("0o") || text.hasPrefix("0b") {
            throw TOMLSyntaxError(position: start, message: "only decimal numbers are supported; '\(text)'")
        }
        // Underscores only between digits.
        let scalars = Array(text.unicodeScalars)
        for (offset, scalar) in scalars.enumerated() where scalar == "_" {
            let before = offset > 0 ? scalars[offset - 1] : " "
            let after = offset + 1 < scalars.count ? scalars[offset + 1] : " "
            guard ("0"..."9").contains(before), ("0"..."9").contains(after) else {
                throw TOMLSyntaxError(position: start, message: "'_' in a number must sit between digits: '\(text)'")
            }
        }
        let plain = String(text.filter { $0 != "_" })
        let digits = plain.drop { $0 == "+" || $0 == "-" }
        let isFloat = plain.contains(".") || plain.contains("e") || plain.contains("E")
        if digits.count > 1, digits.hasPrefix("0"), !(isFloat && digits.dropFirst().first.map { $0 == "." || $0 == "e" || $0 == "E" } ?? false) {
            throw TOMLSyntaxError(position: start, message: "leading zeros are not allowed in '\(text)'")
        }
        if isFloat {
            guard plain.allSatisfy({ "0123456789.eE+-".contains($0) }), let value = Double(plain), value.isFinite,
                !plain.hasSuffix("."), !plain.contains(".e"), !plain.contains(".E"),
                plain.first(where: { $0 != "+" && $0 != "-" }) != "."
            else { throw bad }
            return .float(value)
        }
        guard plain.allSatisfy({ "0123456789+-".contains($0) }), !digits.isEmpty else { throw bad }
        guard let value = Int64(plain.hasPrefix("+") ? String(plain.dropFirst()) : plain) else {
            throw TOMLSyntaxError(position: start, message: "integer '\(text)' does not fit in 64 bits")
        }
        return .integer(value)
    }

    private mutating func parseBasicString() throws(TOMLSyntaxError) -> String {
        let start = position
        advance()
        var text = ""
        while true {
            guard let scalar = current, scalar != "\n" else {
                throw TOMLSyntaxError(position: start, message: "unterminated string (missing closing \")")
            }
            advance()
            if scalar == "\"" { return text }
            if scalar == "\\" {
                let escapePosition = position
                guard let escape = current else { continue }
                advance()
                switch escape {
                case "n": text += "\n"
                case "t": text += "\t"
                case "r": text += "\r"
                case "b": text += "\u{8}"
                case "f": text += "\u{c}"
                case "\"": text += "\""
                case "\\": text += "\\"
                case "e": text += "\u{1b}"
                case "u", "U":
                    let count = escape == "u" ? 4 : 8
                    var hex = ""
                    for _ in 0..<count {
                        guard let digit = current, digit.properties.isASCIIHexDigit else { break }
                        hex.unicodeScalars.append(digit)
                        advance()
                    }
                    guard hex.count == count, let code = UInt32(hex, radix: 16), let value = Unicode.Scalar(code) else {
                        throw TOMLSyntaxError(position: escapePosition, message: "bad unicode escape \\\(escape)\(hex)")
                    }
                    text.unicodeScalars.append(value)
                default:
                    throw TOMLSyntaxError(position: escapePosition, message: "unknown escape '\\\(escape)' in string")
                }
            } else if scalar.value < 0x20 && scalar != "\t" || scalar.value == 0x7F {
                throw TOMLSyntaxError(position: start, message: "control character U+\(String(scalar.value, radix: 16, uppercase: true)) in string; escape it")
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
    }

    private mutating func parseLiteralString() throws(TOMLSyntaxError) -> String {
        let start = position
        advance()
        var text = ""
        while true {
            guard let scalar = current, scalar != "\n" else {
                throw TOMLSyntaxError(position: start, message: "unterminated string (missing closing ')")
            }
            advance()
            if scalar == "'" { return text }
            text.unicodeScalars.append(scalar)
        }
    }

    private mutating func parseArray() throws(TOMLSyntaxError) -> TOMLValue {
        let start = position
        advance()
        var items: [TOMLNode] = []
        while true {
            skipBlank()
            guard let scalar = current else {
                throw TOMLSyntaxError(position: start, message: "unterminated array (missing ']')")
            }
            if scalar == "]" {
                advance()
                return .array(items)
            }
            let itemPosition = position
            items.append(try parseValue(keyPosition: itemPosition))
            skipBlank()
            if atEnd {
                throw TOMLSyntaxError(position: start, message: "unterminated array (missing ']')")
            } else if current == "," {
                advance()
            } else if current != "]" {
                throw TOMLSyntaxError(position: position, message: "expected ',' or ']' in array")
            }
        }
    }

    private mutating func parseInlineTable() throws(TOMLSyntaxError) -> TOMLValue {
        let start = position
        advance()
        var table = TOMLTable()
        skipSpaces()
        if current == "}" {
            advance()
            return .table(table)
        }
        while true {
            skipSpaces()
            let keyPosition = position
            let keys = try parseKey()
            skipSpaces()
            guard current == "=" else { throw TOMLSyntaxError(position: position, message: "expected '=' in inline table") }
            advance()
            skipSpaces()
            let node = try parseValue(keyPosition: keyPosition)
            // Inline tables are small; dotted keys inside them are not needed by the config.
            guard keys.count == 1, let key = keys.first?.0 else {
                throw TOMLSyntaxError(position: keyPosition, message: "dotted keys inside inline tables are not supported")
            }
            if let previous = table[key] {
                throw TOMLSyntaxError(position: keyPosition, message: "duplicate key '\(key)' (first defined on line \(previous.keyPosition.line))")
            }
            table.set(key, node)
            skipSpaces()
            if current == "," {
                advance()
                continue
            }
            guard current == "}" else {
                throw TOMLSyntaxError(position: start, message: "expected ',' or '}' in inline table (inline tables must be on one line)")
            }
            advance()
            return .table(table)
        }
    }
}

/// Every syntax error of one parse.
public struct TOMLParseErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public let errors: [TOMLSyntaxError]
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
