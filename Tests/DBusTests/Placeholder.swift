import Testing
@testable import DBus
@Test func placeholder() {}
