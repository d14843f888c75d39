import ServiceSupport
#if canImport(Glibc)
import Glibc
#endif

/// Process-wide memory settings for mwgated, applied first thing in `main` (before the
/// concurrency pool, libdbus and SQLite start threads that allocate).
///
/// glibc gives every thread that contends for malloc an arena of its own, up to 8 per core;
/// each arena keeps its freed pages (and its fragmentation) for itself. The daemon's
/// allocation rate is low (a few hundred samples per second), so that scaling buys nothing
/// and costs megabytes of resident memory on a 512 MB Raspberry Pi.
public enum ProcessMemory {
    /// The most malloc arenas glibc may create (the main arena included).
    public static let arenaLimit: Int32 = 2

    /// Caps glibc's malloc arenas at `arenaLimit`, unless the administrator chose a value
    /// (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`), which wins.
    public static func configure(environment: [String: String] = ProcessEnvironment.current) {
        #if canImport(Glibc)
        if environment["MALLOC_ARENA_MAX"] != nil { return }
        if let tunables = environment["GLIBC_TUNABLES"], tunables.contains("glibc.malloc.arena_max") { return }
        // Swift's Glibc module leaves out <malloc.h>: look mallopt up, C calling convention.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        typealias MallOpt = @convention(c) (Int32, Int32) -> Int32
        _ = unsafeBitCast(symbol, to: MallOpt.self)(mallocArenaMaxParameter, arenaLimit)
        #endif
    }

    /// `M_ARENA_MAX` from glibc's <malloc.h>.
    static let mallocArenaMaxParameter: Int32 = -8
}
