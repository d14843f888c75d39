import GatewayTestSupport
import Testing

/// The in-process harness fails a test whose services fail to shut down, as the daemon exits
/// with an error then (it discarded that failure, so in-process tests passed where mwgated did not).
@Suite("Running services in a test")
struct RunningServicesTests {
    struct ShutdownFailed: Error {}

    @Test func servicesThatFailToShutDownFailTheTest() async {
        let (stops, stop) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await #expect(throws: ShutdownFailed.self) {
            try await RunningServices.with(run: {
                for await _ in stops {}
                throw ShutdownFailed()
            }, shutDown: { stop.finish() }) { _ in }
        }
    }

    @Test func servicesThatShutDownCleanlyLetTheBodysValueThrough() async throws {
        let (stops, stop) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let value = try await RunningServices.with(run: { for await _ in stops {} }, shutDown: { stop.finish() }) { _ in 7 }
        #expect(value == 7)
    }
}
