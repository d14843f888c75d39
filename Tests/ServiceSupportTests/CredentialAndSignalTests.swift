import Foundation
import Testing
@testable import ServiceSupport

@Suite struct CredentialTests {
    func makeDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "mwgate-cred-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func readsFromCredentialsDirectoryFirst() throws {
        let systemd = try makeDirectory()
        let fallback = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: systemd); try? FileManager.default.removeItem(atPath: fallback) }
        try "hunter2\n".write(toFile: systemd + "/postgres-password", atomically: true, encoding: .utf8)
        try "old\n".write(toFile: fallback + "/postgres-password", atomically: true, encoding: .utf8)
        try "{\"k\":1}".write(toFile: fallback + "/firestore-key.json", atomically: true, encoding: .utf8)
        let store = CredentialStore(environment: ["CREDENTIALS_DIRECTORY": systemd], fallbackDirectory: fallback)
        #expect(try store.string("postgres-password") == "hunter2")
        #expect(try store.data("firestore-key.json") == Data("{\"k\":1}".utf8))
        #expect(store.path(of: "firestore-key.json") == fallback + "/firestore-key.json")
        #expect(!"\(store)".contains("hunter2"))
    }

    @Test func missingCredentialNamesWhereItLooked() throws {
        let fallback = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: fallback) }
        let store = CredentialStore(environment: [:], fallbackDirectory: fallback)
        #expect(throws: CredentialStore.Failure.notFound(name: "postgres-password", searched: [fallback])) {
            try store.string("postgres-password")
        }
        let error = CredentialStore.Failure.notFound(name: "postgres-password", searched: [fallback])
        #expect("\(error)".contains("LoadCredential=postgres-password:"))
        #expect(throws: CredentialStore.Failure.invalidName("../etc/shadow")) { try store.data("../etc/shadow") }
    }

    @Test func oversizedFileIsRefusedWithoutReadingIt() throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(count: CredentialStore.maximumSize + 1).write(to: URL(fileURLWithPath: directory + "/huge"))
        let store = CredentialStore(environment: ["CREDENTIALS_DIRECTORY": directory], fallbackDirectory: nil)
        #expect(throws: CredentialStore.Failure.tooLarge(name: "huge", path: directory + "/huge", bytes: CredentialStore.maximumSize + 1)) {
            try store.data("huge")
        }
    }
}

@Suite(.serialized) struct SignalTests {
    /// Sends `signal` every 100 ms (for up to 30 s) until `body` has seen it, because a signal
    /// sent before the dispatch source is registered is ignored, not queued.
    func keepSignalling(_ signal: Int32, until body: () async -> ServiceSignal?) async -> ServiceSignal? {
        let sender = Task {
            for _ in 0..<300 {
                kill(getpid(), signal)
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let result = await body()
        // Wait for the sender to stop before the stream (and its SIG_IGN) can go away: a
        // SIGTERM arriving after the default action is restored would end the test process.
        sender.cancel()
        _ = await sender.result
        return result
    }

    @Test func deliversHangupAndTerminate() async throws {
        let stream = SignalStream.make([.hangup, .terminate])
        var iterator = stream.makeAsyncIterator()
        #expect(await keepSignalling(SIGHUP) { await iterator.next() } == .hangup)
        // Drain hangups that were still in flight, then expect the terminate.
        var next = await keepSignalling(SIGTERM) { await iterator.next() }
        while next == .hangup { next = await iterator.next() }
        #expect(next == .terminate)
    }
}
