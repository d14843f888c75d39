#if canImport(Glibc)
import Glibc
#endif
@testable import Daemon
import Testing

/// mwgated fixes glibc's mmap threshold (ProcessMemory): without it, freeing one large buffer
/// (a Firestore commit body) raises the threshold to that size, later large buffers come from
/// the arenas, and the arenas keep their pages, so RSS only ever grows (the Firestore soak).
@Suite(.serialized) struct ProcessMemoryTests {
    /// glibc marks a chunk served by its own mapping with bit 1 (IS_MMAPPED) of the size
    /// word just before the pointer.
    private func isOwnMapping(_ pointer: UnsafeMutableRawPointer) -> Bool {
        (pointer - MemoryLayout<UInt>.size).load(as: UInt.self) & 2 != 0
    }

    @Test func largeBuffersKeepTheirOwnMappingAfterALargerOneWasFreed() throws {
        #if canImport(Glibc)
        #expect(ProcessMemory.configure(environment: [:]))
        let large = try #require(malloc(6 << 20))
        memset(large, 1, 6 << 20)
        free(large)
        // Without the fixed threshold glibc would now serve this from an arena.
        let next = try #require(malloc(1 << 20))
        defer { free(next) }
        #expect(isOwnMapping(next))
        #endif
    }
}
