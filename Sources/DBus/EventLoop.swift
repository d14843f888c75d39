#if canImport(Glibc)
import Glibc
#endif
import CDBus
import Basics
import Synchronization

/// A libdbus message pointer handed from a caller's thread to the I/O thread. libdbus
/// messages have no lock, so exactly one thread touches it at a time: the builder until it
/// is enqueued, then the I/O thread, which releases it.
struct RawMessage: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The dedicated I/O thread of one connection.
///
/// The thread owns reading and dispatching: it sleeps in `poll()` over the libdbus watch fds
/// plus an eventfd for wake-ups, with the poll timeout taken from the earliest deadline of
/// its method calls (``PendingCalls``) and of any libdbus timeout, so an idle connection
/// uses no CPU. Other threads may *send* directly (libdbus is thread-safe and writes at
/// once); when a call's deadline is earlier than the time the loop sleeps until, or a send
/// enables a watch (a write that could not finish), the loop is woken through the eventfd.
/// The libdbus callbacks only record state and write the eventfd: libdbus holds the
/// connection lock while calling them, so they never call back into libdbus.
///
/// The loop is also a `TaskExecutor`: a task that prefers it runs on the I/O thread between
/// dispatches, so a reply read there resumes the waiting task in the same thread, with no
/// hand-off to the cooperative pool (see ``DBusConnection/executor``).
final class EventLoop: TaskExecutor, @unchecked Sendable {
    typealias Job = @Sendable (OpaquePointer) -> Void

    private struct Queue {
        var jobs: [Job] = []
        /// Task jobs of tasks that prefer this executor, in enqueue order.
        var tasks: [UnownedJob] = []
        var accepting = true
        var wakePending = false
        /// Jobs to run once their deadline (monotonic ns) has passed, see ``schedule(at:_:)``.
        var deferred: [(deadline: UInt64, job: Job)] = []
    }

    private struct Timer {
        var interval: UInt64
        var deadline: UInt64
    }

    /// Watches and timeouts, shared between the I/O thread and senders' callbacks.
    private struct Tables {
        var watches: [OpaquePointer] = []
        var timers: [OpaquePointer: Timer] = [:]
        /// While the loop sleeps in poll(): the time it will wake by itself.
        var sleepingUntil: UInt64?
    }

    /// The connection's method calls awaiting replies: the loop sleeps no later than their
    /// earliest deadline and fails the calls whose deadline has passed.
    let calls = PendingCalls()
    private let queue = Mutex(Queue())
    // A plain lock rather than Mutex: the tables hold raw libdbus pointers, which region-based
    // isolation checking cannot follow through Mutex's `sending` closures.
    private let tablesLock = PlainLock()
    private var tablesStorage = Tables()
    private let wakeFD: Int32
    private var ioThread = pthread_self()
    // I/O-thread state.
    private var stopRequested = false
    /// Replies read in this dispatch round, resumed together after it (see ``resumeAfterDispatch(_:with:)``).
    private var repliesToResume: [(UnsafeContinuation<DBusMessage, any Error>, Result<DBusMessage, any Error>)] = []
    /// See ``setReadCoalescing(nanoseconds:)``; 0 reads as soon as data arrives.
    private let readCoalescing = Atomic<UInt64>(0)

    /// After reading everything that was waiting, leave the socket alone this long, so a
    /// stream of small signals (hundreds a second) is read and dispatched in groups rather
    /// than with one wake-up each. Replies are delayed by up to the same time. Any thread.
    func setReadCoalescing(nanoseconds: UInt64) {
        readCoalescing.store(nanoseconds, ordering: .relaxed)
        wake()
    }

    init() throws {
        let fd = cdbus_eventfd()
        guard fd >= 0 else { throw DBusError(name: DBusError.Name.failed, message: "eventfd failed: errno \(errno)") }
        wakeFD = fd
    }

    deinit { close(wakeFD) }

    /// Runs `job` on the I/O thread; false when the loop has stopped.
    @discardableResult
    func enqueue(_ job: @escaping Job) -> Bool {
        let (accepted, needsWake): (Bool, Bool) = queue.withLock { state in
            guard state.accepting else { return (false, false) }
            state.jobs.append(job)
            if state.wakePending { return (true, false) }
            state.wakePending = true
            return (true, true)
        }
        // The I/O thread looks at the queue before it sleeps again: no need to wake it.
        if needsWake && !onIOThread { wake() }
        return accepted
    }

    /// Runs `job` on the I/O thread once `deadline` (``now()``, nanoseconds) has passed;
    /// false when the loop has stopped. The loop's poll timeout covers the earliest such
    /// deadline, so a job scheduled from the I/O thread itself costs no extra wake-up while
    /// the loop is woken anyway (e.g. by a stream of signals).
    @discardableResult
    func schedule(at deadline: UInt64, _ job: @escaping Job) -> Bool {
        let accepted: Bool = queue.withLock { state in
            guard state.accepting else { return false }
            state.deferred.append((deadline, job))
            return true
        }
        // The loop recomputes its timeout before it sleeps again when this is its own thread.
        if accepted && !onIOThread { wake() }
        return accepted
    }

    /// `TaskExecutor`: runs a task's job on the I/O thread. Once the loop has stopped, jobs
    /// go to the global concurrent executor, so a task never waits on a dead thread.
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let (accepted, needsWake): (Bool, Bool) = queue.withLock { state in
            guard state.accepting else { return (false, false) }
            state.tasks.append(unowned)
            if state.wakePending { return (true, false) }
            state.wakePending = true
            return (true, true)
        }
        guard accepted else {
            globalConcurrentExecutor.enqueue(ExecutorJob(unowned))
            return
        }
        if needsWake && !onIOThread { wake() }
    }

    private func withTables<T>(_ body: (inout Tables) -> T) -> T {
        tablesLock.lock()
        defer { tablesLock.unlock() }
        return body(&tablesStorage)
    }

    /// Interrupts the loop's sleep (any thread).
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    var onIOThread: Bool { pthread_equal(pthread_self(), ioThread) != 0 }

    /// I/O thread: resumes a caller once the current dispatch round is over, together with
    /// the other replies read in it. Resuming a task on the global executor wakes a pool
    /// thread; a group of resumptions in a row wakes one or two that then run them all,
    /// where resumptions spread over the round would wake one for each.
    func resumeAfterDispatch(_ continuation: UnsafeContinuation<DBusMessage, any Error>,
                             with result: Result<DBusMessage, any Error>) {
        repliesToResume.append((continuation, result))
    }

    /// I/O thread: resumes the callers collected in the dispatch round.
    func resumeReplies() {
        guard !repliesToResume.isEmpty else { return }
        // Resuming only enqueues the task (on the pool, or on this loop for the next turn),
        // so nothing is appended meanwhile and the buffer is reused rather than copied.
        for (continuation, result) in repliesToResume { continuation.resume(with: result) }
        repliesToResume.removeAll(keepingCapacity: true)
    }

    /// Called on the I/O thread to end the loop after the current iteration.
    func requestStop() { stopRequested = true }

    /// Installs the watch and timeout functions on `connection` (I/O thread, before `run`).
    func install(on connection: OpaquePointer) {
        ioThread = pthread_self()
        let data = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(connection, { watch, data in
            guard let watch, let data else { return 0 }
            Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue().watchChanged(watch, added: true)
            return 1
        }, { watch, data in
            guard let watch, let data else { return }
            Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue().withTables { $0.watches.removeAll { $0 == watch } }
        }, { watch, data in
            guard let watch, let data else { return }
            Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue().watchChanged(watch, added: false)
        }, data, nil)
        dbus_connection_set_timeout_functions(connection, { timeout, data in
            guard let timeout, let data else { return 0 }
            Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue().timeoutChanged(timeout)
            return 1
        }, { timeout, data in
            guard let timeout, let data else { return }
            Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue().withTables { $0.timers[timeout] = nil }
        }, { timeout, data in
            guard let timeout, let data else { return }
            Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue().timeoutChanged(timeout)
        }, data, nil)
    }

    private func watchChanged(_ watch: OpaquePointer, added: Bool) {
        let sleeping: Bool = withTables { tables in
            if added { tables.watches.append(watch) }
            return tables.sleepingUntil != nil
        }
        if sleeping && !onIOThread { wake() }
    }

    private func timeoutChanged(_ timeout: OpaquePointer) {
        let enabled = dbus_timeout_get_enabled(timeout) != 0
        let interval = UInt64(max(0, dbus_timeout_get_interval(timeout))) * 1_000_000
        let deadline = Self.now() + interval
        let needsWake: Bool = withTables { tables in
            guard enabled else {
                tables.timers[timeout] = nil
                return false
            }
            tables.timers[timeout] = Timer(interval: interval, deadline: deadline)
            guard let sleepingUntil = tables.sleepingUntil else { return false }
            return deadline < sleepingUntil
        }
        if needsWake && !onIOThread { wake() }
    }

    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// The loop: returns when the connection is gone or a job called ``requestStop()``.
    func run(connection: OpaquePointer, isAlive: () -> Bool) {
        var pollFDs: [pollfd] = []
        var polledWatches: [OpaquePointer?] = []
        // Read coalescing: `draining` while reads keep finding data; then rest until `holdUntil`.
        var draining = false
        var holdUntil: UInt64 = 0
        while true {
            runJobs(connection)
            while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
            resumeReplies()
            if stopRequested || !isAlive() { return }
            // Queued jobs run next, but the sockets are still looked at (without sleeping),
            // so tasks that keep re-queueing themselves cannot starve the connection.
            let jobsWaiting = hasQueuedJobs()

            pollFDs.removeAll(keepingCapacity: true)
            polledWatches.removeAll(keepingCapacity: true)
            pollFDs.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            polledWatches.append(nil)
            let now = Self.now()
            let coalescing = readCoalescing.load(ordering: .relaxed)
            if coalescing == 0 { draining = false; holdUntil = 0 }
            let holding = holdUntil > now
            let earliest: UInt64? = withTables { tables in
                for watch in tables.watches where dbus_watch_get_enabled(watch) != 0 {
                    let flags = dbus_watch_get_flags(watch)
                    var events: Int16 = 0
                    if flags & DBUS_WATCH_READABLE.rawValue != 0, !holding { events |= Int16(POLLIN) }
                    if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
                    guard events != 0 else { continue }
                    pollFDs.append(pollfd(fd: dbus_watch_get_unix_fd(watch), events: events, revents: 0))
                    polledWatches.append(watch)
                }
                // A loop, not map/min: this runs on every turn, and an array per turn shows.
                var earliest: UInt64?
                for timer in tables.timers.values where timer.deadline < earliest ?? .max { earliest = timer.deadline }
                tables.sleepingUntil = earliest ?? .max
                return earliest
            }
            var timeoutMs: Int32 = -1
            var wakeAt = earliest
            if let deferred = earliestDeferred() { wakeAt = min(wakeAt ?? .max, deferred) }
            if let call = calls.loopWillSleep(now: now) { wakeAt = min(wakeAt ?? .max, call) }
            if holding { wakeAt = min(wakeAt ?? .max, holdUntil) }
            if let wakeAt {
                timeoutMs = wakeAt <= now ? 0 : Int32(min(UInt64(Int32.max), (wakeAt - now + 999_999) / 1_000_000))
            }
            if draining || jobsWaiting { timeoutMs = 0 }
            let ready = poll(&pollFDs, nfds_t(pollFDs.count), timeoutMs)
            withTables { $0.sleepingUntil = nil }
            // Resumed with the replies after the next dispatch round.
            for waiter in calls.loopAwoke(now: Self.now()) {
                waiter.finish(.failure(DBusError(name: DBusError.Name.noReply, message: "no reply came within the call's timeout")),
                              resumingAfterDispatchOf: self)
            }
            if ready < 0 && errno != EINTR { return }
            if coalescing > 0, !holding {
                let readable = ready > 0 && pollFDs.dropFirst().contains { $0.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 }
                if readable {
                    draining = true
                } else if draining {
                    // The socket is empty: rest before reading again.
                    draining = false
                    holdUntil = Self.now() + coalescing
                }
            }
            if ready > 0 {
                if pollFDs[0].revents != 0 { drainWake() }
                for index in 1..<pollFDs.count where pollFDs[index].revents != 0 {
                    // An earlier handle may have removed this watch.
                    guard let watch = polledWatches[index], withTables({ $0.watches.contains(watch) }) else { continue }
                    let revents = Int32(pollFDs[index].revents)
                    var flags: UInt32 = 0
                    if revents & Int32(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
                    if revents & Int32(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
                    if revents & Int32(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
                    if revents & Int32(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
                    dbus_watch_handle(watch, flags)
                }
            }
            fireTimers()
            runDeferred(connection)
        }
    }

    private func earliestDeferred() -> UInt64? {
        queue.withLock { state in
            var earliest: UInt64?
            for entry in state.deferred where entry.deadline < earliest ?? .max { earliest = entry.deadline }
            return earliest
        }
    }

    /// Runs the scheduled jobs that are due, in deadline order.
    private func runDeferred(_ connection: OpaquePointer) {
        let now = Self.now()
        let due: [(deadline: UInt64, job: Job)] = queue.withLock { state in
            guard state.deferred.contains(where: { $0.deadline <= now }) else { return [] }
            let due = state.deferred.filter { $0.deadline <= now }
            state.deferred.removeAll { $0.deadline <= now }
            return due
        }
        for entry in due.sorted(by: { $0.deadline < $1.deadline }) { entry.job(connection) }
    }

    /// Handles due libdbus timeouts. They belong to libdbus's own pending calls (ours match
    /// their replies themselves), which only this thread's libdbus calls create and remove,
    /// so a due pointer stays valid until handled.
    private func fireTimers() {
        let now = Self.now()
        let due: [OpaquePointer] = withTables { tables in
            // Most loop turns (every signal read) find nothing due: no allocation for them.
            guard tables.timers.values.contains(where: { $0.deadline <= now }) else { return [] }
            let due = tables.timers.filter { $0.value.deadline <= now }.map(\.key)
            for timeout in due {
                if var timer = tables.timers[timeout] {
                    timer.deadline = now + timer.interval
                    tables.timers[timeout] = timer
                }
            }
            return due
        }
        for timeout in due where withTables({ $0.timers[timeout] != nil }) {
            dbus_timeout_handle(timeout)
        }
    }

    private func hasQueuedJobs() -> Bool { queue.withLock { !$0.jobs.isEmpty || !$0.tasks.isEmpty } }

    private func drainWake() {
        var value: UInt64 = 0
        _ = read(wakeFD, &value, 8)
    }

    /// Runs the queued closures, then the queued task jobs (I/O thread, outside dispatch, so
    /// tasks may call into libdbus).
    private func runJobs(_ connection: OpaquePointer) {
        // Taken by swapping in empty arrays: emptying a buffer the returned copy still shares
        // would allocate a fresh one on every loop turn.
        let (jobs, tasks): ([Job], [UnownedJob]) = queue.withLock { state in
            state.wakePending = false
            guard !state.jobs.isEmpty || !state.tasks.isEmpty else { return ([], []) }
            let taken = (state.jobs, state.tasks)
            state.jobs = []
            state.tasks = []
            return taken
        }
        for job in jobs { job(connection) }
        if !tasks.isEmpty {
            let executor = asUnownedTaskExecutor()
            for task in tasks { task.runSynchronously(on: executor) }
        }
    }

    /// Stops accepting jobs and runs the ones already queued or scheduled (I/O thread, at shutdown).
    /// Task jobs queued meanwhile go on the global executor.
    func drainAfterStop(_ connection: OpaquePointer) {
        let deferred: [(deadline: UInt64, job: Job)] = queue.withLock { state in
            state.accepting = false
            defer { state.deferred.removeAll() }
            return state.deferred
        }
        runJobs(connection)
        // Scheduled jobs run now rather than never (e.g. held signals are handed on).
        for entry in deferred.sorted(by: { $0.deadline < $1.deadline }) { entry.job(connection) }
    }
}
