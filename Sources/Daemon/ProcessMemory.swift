import ServiceSupport
#if canImport(Glibc)
import Glibc
#endif

/// Process-wide allocator settings for mwgated, applied first thing in `main` (before the
/// concurrency pool, libdbus and SQLite start threads that allocate) and again, harmlessly, by
/// ``Daemon/run(_:environment:extraServices:)`` for embedders that skip `main`.
///
/// Two glibc defaults cost resident memory on a 512 MB Raspberry Pi and buy nothing at the
/// daemon's low allocation rate (a few hundred samples per second):
/// - every thread that contends for malloc gets an arena of its own (up to 8 per core), and
///   each arena keeps its freed pages and fragmentation to itself;
/// - glibc raises its mmap threshold to the size of every large block freed (up to 32 MiB), so
///   after the first Firestore commit body (several MB) large buffers come from the arenas,
///   which keep the pages once freed. The soak saw RSS climb 57 → 82 MB over 300 s while the
///   live heap stayed flat (heaptrack: 1.75 MB still allocated after 355 s). A fixed threshold
///   keeps blocks of 256 KiB and more in their own mappings, returned to the kernel when freed,
///   for an mmap and munmap per large buffer: a few system calls per commit.
public enum ProcessMemory {
    /// The most malloc arenas glibc may create (the main arena included).
    public static let arenaLimit: Int32 = 2

    /// Blocks at least this large are mapped on their own.
    public static let mmapThreshold: Int32 = 256 * 1024

    /// Applies both settings. An administrator's choice wins for each: `MALLOC_ARENA_MAX` or
    /// `MALLOC_MMAP_THRESHOLD_`, or the matching `glibc.malloc.*` entry in `GLIBC_TUNABLES`.
    /// Returns false when the C library has no `mallopt` (not glibc) or refused a setting.
    @discardableResult
    public static func configure(environment: [String: String] = ProcessEnvironment.current) -> Bool {
        #if canImport(Glibc)
        // Swift's Glibc module leaves out <malloc.h>: look mallopt up, C calling convention.
        guard let symbol = dlsym(nil, "mallopt") else { return false }
        typealias MallOpt = @convention(c) (Int32, Int32) -> Int32
        let mallopt = unsafeBitCast(symbol, to: MallOpt.self)
        let tunables = environment["GLIBC_TUNABLES"] ?? ""
        var applied = true
        if environment["MALLOC_ARENA_MAX"] == nil, !tunables.contains("glibc.malloc.arena_max") {
            applied = mallopt(arenaMaxParameter, arenaLimit) == 1 && applied
        }
        if environment["MALLOC_MMAP_THRESHOLD_"] == nil, !tunables.contains("glibc.malloc.mmap_threshold") {
            applied = mallopt(mmapThresholdParameter, mmapThreshold) == 1 && applied
        }
        return applied
        #else
        return false
        #endif
    }

    /// `M_ARENA_MAX` and `M_MMAP_THRESHOLD` from glibc's <malloc.h> (stable ABI; the header
    /// does not import into Swift).
    static let arenaMaxParameter: Int32 = -8
    static let mmapThresholdParameter: Int32 = -3
}
