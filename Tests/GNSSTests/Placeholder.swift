import Testing
@testable import GNSS
@Test func placeholder() {}
