package io.mooring.netty;

/**
 * Where an application releases the buffers it allocates: what a {@link MooringByteBufAllocator} makes cheap. Either
 * is correct from any thread; the pattern only moves the cost.
 */
public enum ReleasePattern {
    /**
     * Mostly on the allocating thread — an event loop that reads, handles and releases (the default). That release costs
     * no atomic beyond the reference count's; one on another thread is the arena's mt free, a CAS onto the allocating
     * thread's list, collected by it in a batch.
     */
    SAME_THREAD,
    /**
     * Mostly on other threads — I/O threads allocate, workers release. Each block is handed off as it is allocated
     * ({@code Block.handOff()}), so a release anywhere frees it at once into the releasing thread's cache, as jemalloc
     * frees a foreign pointer. Measured (docs/benchmarks.md): 0.7–0.9× the CPU of {@link #SAME_THREAD} across threads,
     * 1.5–2.2× on one thread.
     */
    OTHER_THREADS
}
