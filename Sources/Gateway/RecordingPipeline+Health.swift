extension RecordingPipeline {
    /// What a watchdog needs to know: when the pipeline last ticked and whether the buffer
    /// refused the last write (nil when it took it).
    public struct Health: Sendable, Equatable {
        /// The last ``tick()`` (nil before the first).
        public var lastTickAt: ContinuousClock.Instant?
        /// The buffer's last write error while sealed chunks wait for a retry; nil while writes succeed.
        public var bufferError: String?
        /// True after ``shutdown()``.
        public var isShutDown: Bool
        /// True while nothing periodic is to be done, so the pipeline does not tick (answering
        /// at all is then its sign of life).
        public var isIdle: Bool

        public init(lastTickAt: ContinuousClock.Instant?, bufferError: String?, isShutDown: Bool, isIdle: Bool = false) {
            self.lastTickAt = lastTickAt
            self.bufferError = bufferError
            self.isShutDown = isShutDown
            self.isIdle = isIdle
        }
    }
}
