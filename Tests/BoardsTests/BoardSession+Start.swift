import Boards

extension BoardSession {
    /// Runs the session in a task of its own, as tests need (the gateway runs it in the
    /// board manager's task group); ``BoardSession/stop()`` ends it.
    @discardableResult
    func start() async -> Task<Void, Never> {
        Task { await self.run() }
    }
}
