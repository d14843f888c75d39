import Foundation

/// Reads secrets handed over by systemd (`LoadCredential=NAME:PATH` puts them in
/// `$CREDENTIALS_DIRECTORY/NAME`, readable only by the service) with a fallback directory for
/// runs outside systemd. Contents never appear in errors, descriptions or logs: callers get
/// the bytes and nothing else prints them.
public struct CredentialStore: Sendable, CustomStringConvertible {
    /// `$CREDENTIALS_DIRECTORY`, when systemd set it.
    public let credentialsDirectory: String?
    /// Where to look when the credential is not in the systemd directory (e.g.
    /// `/etc/credstore`, where the unit loads them from, for manual runs as root); nil for none.
    public let fallbackDirectory: String?

    /// Longest credential accepted; a bigger file is a mistake (wrong path), not a secret.
    public static let maximumSize = 1 << 20

    /// A store reading `CREDENTIALS_DIRECTORY` from `environment`.
    public init(
        environment: [String: String] = ProcessEnvironment.current,
        fallbackDirectory: String? = "/etc/credstore"
    ) {
        credentialsDirectory = environment["CREDENTIALS_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
        self.fallbackDirectory = fallbackDirectory
    }

    /// Why a credential could not be read. Names the credential and paths, never contents.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The name is not a plain file name (credential names cannot contain `/`).
        case invalidName(String)
        /// Not found in any searched directory.
        case notFound(name: String, searched: [String])
        /// Found but unreadable (permissions, I/O).
        case unreadable(name: String, path: String, reason: String)
        /// Larger than `maximumSize`.
        case tooLarge(name: String, path: String, bytes: Int)

        public var description: String {
            switch self {
            case .invalidName(let name):
                "credential name '\(name)' is not a plain file name"
            case .notFound(let name, let searched):
                searched.isEmpty
                    ? "credential '\(name)' not available: no CREDENTIALS_DIRECTORY (add LoadCredential=\(name):PATH to the unit) and no fallback directory"
                    : "credential '\(name)' not found (looked in \(searched.joined(separator: ", ")); add LoadCredential=\(name):PATH to the unit or place the file there"
            case .unreadable(let name, let path, let reason):
                "credential '\(name)' at \(path) cannot be read: \(reason)"
            case .tooLarge(let name, let path, let bytes):
                "credential '\(name)' at \(path) is \(bytes) bytes; that is not a secret file (limit \(CredentialStore.maximumSize))"
            }
        }
    }

    /// Directories searched, in order.
    public var searchPath: [String] { [credentialsDirectory, fallbackDirectory].compactMap { $0 } }

    /// The path a credential would be read from, if it exists.
    public func path(of name: String) -> String? {
        guard Self.isValidName(name) else { return nil }
        return searchPath.map { "\($0)/\(name)" }.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// The credential's bytes.
    public func data(_ name: String) throws(Failure) -> Data {
        guard Self.isValidName(name) else { throw .invalidName(name) }
        guard let path = path(of: name) else { throw .notFound(name: name, searched: searchPath) }
        let size: Int
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        } catch {
            throw .unreadable(name: name, path: path, reason: Self.reason(error))
        }
        guard size <= Self.maximumSize else { throw .tooLarge(name: name, path: path, bytes: size) }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadable(name: name, path: path, reason: Self.reason(error))
        }
    }

    /// The credential as UTF-8 text with one trailing newline removed (files written with
    /// `echo` end in one; a password does not).
    public func string(_ name: String) throws(Failure) -> String {
        let bytes = try data(name)
        guard var text = String(data: bytes, encoding: .utf8) else {
            throw .unreadable(name: name, path: path(of: name) ?? name, reason: "not UTF-8 text")
        }
        if text.hasSuffix("\r\n") { text.removeLast(1) }
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    public var description: String {
        "CredentialStore(search: \(searchPath.joined(separator: ", ")))"
    }

    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0")
    }

    private static func reason(_ error: any Error) -> String {
        // Foundation's messages name the file, never the contents.
        if let cocoa = error as? CocoaError, let underlying = cocoa.underlying as? POSIXError {
            return String(describing: underlying.code)
        }
        return (error as NSError).localizedDescription
    }
}

extension CocoaError {
    fileprivate var underlying: (any Error)? { userInfo[NSUnderlyingErrorKey] as? any Error }
}
