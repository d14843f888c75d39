import Testing
@testable import MetaWear
@Test func placeholder() {}
