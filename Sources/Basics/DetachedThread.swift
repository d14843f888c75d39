#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An operating-system thread of its own for blocking work that must not hold a thread of the
/// cooperative pool (a D-Bus connection's I/O loop, a serial port's blocking reads).
///
/// Foundation's `Thread` does the same, but it lives in full Foundation: a module that uses it
/// links Foundation, CoreFoundation and ICU's data (about 40 MB) into every binary that links
/// the module, mwctl included.
public enum DetachedThread {
    /// The thread could not be created (the process or the system is out of threads).
    public struct StartError: Error, CustomStringConvertible {
        public var name: String
        public var code: Int32
        public var description: String { "cannot start thread '\(name)': \(String(cString: strerror(code)))" }
    }

    /// Runs `body` on a new detached thread named `name` (Linux keeps its first 15 bytes).
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(StartError) {
        let context = Unmanaged.passRetained(Context(name: name, body: body)).toOpaque()
        let result = spawn(context)
        if result != 0 {
            Unmanaged<Context>.fromOpaque(context).release()
            throw StartError(name: name, code: result)
        }
    }

    /// pthread_create's result for a detached thread that runs `context`'s body.
    private static func spawn(_ context: UnsafeMutableRawPointer) -> Int32 {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let result = pthread_create(&thread, &attributes, detachedThreadMain, context)
        pthread_attr_destroy(&attributes)
        return result
    }

    /// Names the calling thread (in `top -H`, `ps -L`, crash reports). Linux's
    /// `pthread_setname_np` is not visible to Swift (it needs `_GNU_SOURCE`); it writes the
    /// thread's `comm` file, as this does.
    private static func nameThisThread(_ name: String) {
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        #elseif canImport(Darwin)
        pthread_setname_np(name)
        #endif
    }

    /// The new thread's entry: takes over the context `start` retained for it.
    fileprivate static func main(_ raw: UnsafeMutableRawPointer) {
        let context = Unmanaged<Context>.fromOpaque(raw).takeRetainedValue()
        nameThisThread(context.name)
        context.body()
    }

    private final class Context {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}

/// pthread_create's entry point (a C function pointer: no captures).
private func detachedThreadMain(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    if let raw { DetachedThread.main(raw) }
    return nil
}
