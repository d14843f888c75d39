import Foundation
import Testing
@testable import DBus

@Suite struct ConnectionTests {
    @Test func connectsAndOwnsNames() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let connection = try await DBusConnection(address: bus.address)
        defer { connection.close() }
        #expect(connection.uniqueName.hasPrefix(":"))
        #expect(connection.canPassFileDescriptors)
        #expect(try await connection.requestName("org.mwgate.Test") == .primaryOwner)
        let other = try await DBusConnection(address: bus.address)
        defer { other.close() }
        #expect(try await other.requestName("org.mwgate.Test") == .exists)
        #expect(try await other.nameOwner("org.mwgate.Test") == connection.uniqueName)
        #expect(try await connection.releaseName("org.mwgate.Test") == .released)
        #expect(try await other.nameOwner("org.mwgate.Test") == nil)
    }
}
