package io.mooring.regcache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.mooring.allocator.internal.KernelPage;
import io.mooring.lifecycle.DestroyFailedException;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * {@link EvictionPolicy#FREQUENCY}: a Caffeine cache (W-TinyLFU) of the cache's regions decides which go. Its
 * frequency sketch remembers how often each range of pages became unused, also after the region was evicted (the
 * {@link CachedRegion.RegionKey} outlives the MR), so a region registered once by a scan loses to a hot one.
 *
 * <p>Caffeine holds every region from its miss on, weighted so that its one weight bound stands for both of ours:
 * a region weighs its pages but at least a {@code 1/maxCount} share of the page budget, so no more than
 * {@code maxCount} regions and {@code maxBytes} fit (exact for regions of one size, stricter for mixed ones).
 * When Caffeine evicts a region its removal listener runs on this policy's executor — one virtual thread of its
 * own, started when there is work and ended after a second idle, never a thread holding the cache's lock — and
 * deregisters it through {@link RegistrationCache#evict}, if it is still unused. One in use stays registered and
 * leaves Caffeine; its last release puts it back. Caffeine's maintenance runs on that thread too. A region in use
 * counts against the bound while Caffeine holds it, so the policy may keep fewer unused regions than the bounds
 * allow, never more.
 *
 * <p>The hit path does not touch Caffeine. A release that leaves a region unused records a use (a Caffeine read)
 * only while the index holds more than half of either bound. Below that, Caffeine's weight cannot reach its
 * maximum, so nothing is evicted, and its frequency sketch does not count yet (Caffeine starts it when the entries
 * weigh half the maximum): a release of a cache that fits pays nothing for the policy.
 */
final class FrequencyEviction implements Eviction {
    private static final System.Logger LOG = System.getLogger(FrequencyEviction.class.getName());

    private final RegistrationCache cache;
    private final ThreadPoolExecutor evictor;
    private final Cache<CachedRegion.RegionKey, CachedRegion> regions;
    private final long learnAboveCount;
    private final long learnAboveBytes;
    /** Set by close: releases after it (of regions retired in use) leave Caffeine, and its stopped executor, alone. */
    private volatile boolean closed;

    FrequencyEviction(RegistrationCache cache, long maxBytes, long maxCount) {
        this.cache = cache;
        this.learnAboveCount = maxCount / 2;
        this.learnAboveBytes = maxBytes / 2;
        long budget = maxCount == 0 ? 0 : maxBytes / KernelPage.SIZE; // in pages: a weight is an int
        long share = Math.clamp(Math.ceilDiv(budget, Math.max(1, maxCount)), 1, Integer.MAX_VALUE);
        // One thread, so tasks run in the order Caffeine submits them; the queue holds one task per region Caffeine
        // evicted (or one maintenance run), so it is bounded by the regions registered.
        this.evictor = new ThreadPoolExecutor(0, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                Thread.ofVirtual().name(cache.name() + "-eviction").factory());
        this.regions = Caffeine.newBuilder()
                .maximumWeight(budget)
                .<CachedRegion.RegionKey, CachedRegion>weigher(
                        (key, r) -> Math.clamp(Math.max(r.length() / KernelPage.SIZE, share), 0, Integer.MAX_VALUE))
                .executor(evictor)
                .removalListener((key, r, cause) -> {
                    if (cause == RemovalCause.SIZE && r != null) chosen(r);
                })
                .build();
    }

    @Override
    public void added(CachedRegion r) {
        if (closed) return;
        regions.put(r.key, r); // replaces a retired region of the same pages whose entry lingered
    }

    @Override
    public void unused(CachedRegion r) {
        if (closed) return;
        if (r.outOfPolicy) {
            r.outOfPolicy = false;
            track(r);
        } else {
            RegionIndex index = cache.index();
            if (index.size() > learnAboveCount || index.bytes() > learnAboveBytes) track(r);
        }
    }

    /** A use of {@code r}: Caffeine counts it if it knows the region, or takes it back in. */
    private void track(CachedRegion r) {
        CachedRegion known = regions.asMap().putIfAbsent(r.key, r);
        if (known != null && known != r && known.isRetired()) regions.asMap().replace(r.key, known, r);
    }

    @Override
    public void left(CachedRegion r) {
        if (closed) return;
        regions.asMap().remove(r.key, r);
    }

    /** Caffeine evicted {@code r} (on the evictor): deregister it unless a hit took it meanwhile. */
    private void chosen(CachedRegion r) {
        try {
            if (r.isRetired() || evict(r)) return;
            r.outOfPolicy = true; // in use: its last release puts it back
            evict(r); // unless that release came before the flag: then it is unused now, and goes
        } catch (DestroyFailedException e) {
            LOG.log(System.Logger.Level.WARNING, "deregistering " + r + ", evicted from " + cache.name() + ", failed", e);
        }
    }

    /** Whether {@code r} was still unused, and is evicted now. */
    private boolean evict(CachedRegion r) {
        return cache.evict(index -> r.retireIfUnused() ? List.of(r) : List.of()) > 0;
    }

    /** Runs Caffeine's maintenance and waits until the evictions it chose are done. */
    @Override
    public void settle() {
        try {
            // An eviction's deregistration makes Caffeine work again (the entry's removal): twice reaches the end.
            for (int i = 0; i < 2; i++) {
                regions.cleanUp();
                evictor.submit(() -> {}).get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        regions.invalidateAll(); // the listener ignores explicit removals
        evictor.close(); // waits for the evictions under way
    }
}
