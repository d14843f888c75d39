import Daemon
import Foundation
import Gateway
import Testing

@Suite struct StatusLineTests {
    @Test func watchdogNeedsARecentTickAndAWritableBuffer() {
        let now = ContinuousClock.now
        let healthy = RecordingPipeline.Health(lastTickAt: now - .milliseconds(300), bufferError: nil, isShutDown: false)
        #expect(DaemonService.isHealthy(healthy, now: now))
        var stale = healthy
        stale.lastTickAt = now - .seconds(10)
        #expect(!DaemonService.isHealthy(stale, now: now))
        var neverTicked = healthy
        neverTicked.lastTickAt = nil
        #expect(!DaemonService.isHealthy(neverTicked, now: now))
        var bufferFull = healthy
        bufferFull.bufferError = "disk full"
        #expect(!DaemonService.isHealthy(bufferFull, now: now))
    }
}
