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

    /// Allocates `size`-byte blocks until glibc maps one on its own (returned), at most
    /// `limit` of them; the others are freed again.
    ///
    /// glibc consults the threshold only when its arena cannot serve a request: free arena
    /// space is used first, whatever the size. The other suites of this process run at the
    /// same time and leave an unknown amount of it, so one allocation proves nothing; a
    /// series does: below the threshold every block comes from the arena, however many.
    private func firstOwnMapping(size: Int, limit: Int) -> UnsafeMutableRawPointer? {
        var held: [UnsafeMutableRawPointer] = []
        defer { held.forEach { free($0) } }
        for _ in 0..<limit {
            guard let block = malloc(size) else { return nil }
            if isOwnMapping(block) { return block }
            held.append(block)
        }
        return nil
    }

    @Test func largeBuffersKeepTheirOwnMappingAfterALargerOneWasFreed() throws {
        #if canImport(Glibc)
        #expect(ProcessMemory.configure(environment: [:]))
        // Up to 192 MiB of address space each, barely touched: more than the arenas keep free.
        let large = try #require(firstOwnMapping(size: 6 << 20, limit: 32), "no 6 MiB block got its own mapping")
        memset(large, 1, 6 << 20)
        // Freeing a mapped block is what raises glibc's dynamic threshold (to 6 MiB here).
        free(large)
        let next = firstOwnMapping(size: 1 << 20, limit: 192)
        defer { free(next) }
        #expect(next != nil, "1 MiB blocks come from the arenas after a 6 MiB block was freed: the threshold moved")
        #endif
    }
}
