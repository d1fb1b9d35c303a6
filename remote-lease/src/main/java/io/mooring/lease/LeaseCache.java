package io.mooring.lease;

import com.github.benmanes.caffeine.cache.AsyncLoadingCache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.Scheduler;
import com.github.benmanes.caffeine.cache.stats.CacheStats;
import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.CompletionDispatcher;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * A requester's cache of the leases one peer gave it, by a key of the application's: a value it READs where the
 * peer keeps it, a page of a remote file. It keeps a segment while it is usable and the peer lets this host hold it,
 * and releases it when it goes:
 * <ul>
 *   <li><b>bounded by the peer's limits</b> — at most {@link LeaseLimits#maxLeases()} leases and
 *       {@link LeaseLimits#maxBytes()} bytes (or the smaller bounds set), so the peer never refuses a lease because
 *       this host holds too much. The lease bound counts what the peer counts: segments held, loads under way, and
 *       released ones until the peer acknowledged the release — a revoked one's too, which answered the revocation
 *       (one whose answer never came, for twice the peer's grace) — and a load past it waits; the cache keeps a
 *       sixteenth of it free for those. Which segments go is Caffeine's W-TinyLFU choice, so a scan keeps the hot
 *       keys;</li>
 *   <li><b>expiring with its lease</b>, a {@link Builder#margin margin} before the {@link RemoteSegment#remaining()}
 *       term ends (itself a margin before the owner's deadline), so a segment handed out has time left for an
 *       operation, and the release reaches the owner before it would end the lease itself;</li>
 *   <li><b>releasing</b> ({@link RemoteSegment#closeAsync()}) whatever leaves it — evicted, expired, invalidated,
 *       or at {@link #close()} — once no task borrows it ({@link BorrowedLease}): the owner ends a released lease at
 *       once, and an access after that would fail on the NIC and end the session;</li>
 *   <li><b>dropping a revoked lease</b> as soon as the owner revokes it ({@link RemoteSegment#revoked()}), or is
 *       found ended when asked for: the owner is asked again, not the dead key handed out (call {@link #invalidate}
 *       when an operation finds a lease ended between the two);</li>
 *   <li><b>loading once per key</b>: tasks that miss the same key together share one call of the loader.</li>
 * </ul>
 * <pre>{@code
 * LeaseCache<String> values = LeaseCache.<String>builder(session).limits(serverLimits)
 *         .build(key -> askServerFor(key));   // a future of the segment the server offers
 * try (BorrowedLease value = values.acquire("user:42")) {
 *     value.segment().read(local, 0);   // the cache does not release a lease while it is borrowed
 * }
 * }</pre>
 *
 * <p>A miss asks the loader on the thread that missed, so it costs the request and no hand-off; Caffeine's
 * maintenance and the removal listener run on virtual threads of the cache's own, never on a caller's thread holding
 * a lock; a release sends RELEASE without waiting for the answer. Thread-safe.
 *
 * @param <K> the application's key
 */
public final class LeaseCache<K> implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LeaseCache.class.getName());
    /** How often a load waiting for a lease to come free runs the cache's pending maintenance ({@link #awaitLease}). */
    private static final long MAINTENANCE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final AsyncLoadingCache<K, CachedLease> cache;
    private final Duration timeout;
    /** How long {@link #acquire} waits: a lease's wait, then the load (computed once: Duration arithmetic is slow). */
    private final Duration acquireTimeout;
    private final Await await;
    private final Executor executor;
    /**
     * How long the peer may still count a lease whose release it did not acknowledge (the answer failed or timed out):
     * until it ends the lease itself, a {@link LeaseLimits#grace()} past the deadline, then the revocation: as long
     * again.
     */
    private final Duration ending;
    /** Leases the peer may count against this cache: taken by a load, given back when the peer no longer counts it. */
    private final Semaphore leases;
    private volatile boolean closed;

    private LeaseCache(Builder<K> b, Function<? super K, CompletableFuture<RemoteSegment>> loader) {
        this.timeout = b.session.endpoint().requestTimeout();
        this.acquireTimeout = timeout.multipliedBy(2);
        this.await = b.session.endpoint().await;
        this.ending = b.grace.multipliedBy(2);
        this.leases = new Semaphore(b.maxLeases);
        ThreadFactory threads = Thread.ofVirtual().name("lease-cache-", 0).factory();
        this.executor = task -> threads.newThread(task).start(); // nothing to stop: a thread per task
        // One weight stands for both bounds: a segment weighs its bytes but at least its share of the byte budget
        // (maxBytes / maxLeases), so no more than maxLeases segments and maxBytes bytes fit (exact when all segments
        // are on the same side of the share, stricter for a mix). Units keep a weight within an int.
        int held = b.maxLeases - Math.max(1, b.maxLeases / 16); // the rest is for loads and releases under way
        long unit = Math.max(1, b.maxBytes >>> 30);
        long budget = b.maxBytes / unit * held / b.maxLeases;
        long share = Math.ceilDiv(budget, held);
        Duration margin = b.margin;
        this.cache = Caffeine.newBuilder()
                .executor(executor)
                .scheduler(Scheduler.systemScheduler()) // an expired lease is released on time, not at the next access
                .maximumWeight(budget)
                .<K, CachedLease>weigher((key, l) -> Math.clamp(Math.max(Math.ceilDiv(l.segment.length(), unit),
                        share), 0, Integer.MAX_VALUE))
                .expireAfter(Expiry.<K, CachedLease>writing((key, l) -> l.segment.remaining().minus(margin)))
                .removalListener((key, l, cause) -> {
                    if (l != null && l.leave()) release(l.segment); // else its last borrower releases it
                })
                .recordStats()
                .buildAsync((key, pool) -> load(key, loader));
    }

    /** A cache of the leases {@code session}'s peer gives; see {@link Builder} for the settings. */
    public static <K> Builder<K> builder(RdmaSession session) {
        return new Builder<>(session);
    }

    /**
     * Borrows the segment of {@code key}: a usable one the cache holds, or the loader's. A revoked or expired one the
     * cache still held is dropped and loaded again. Concurrent calls for a missing key share one load. Close what it
     * returns when the operations on the segment are done: until then the cache does not release the lease.
     *
     * @return a future of the borrowed segment, or of null if the loader found nothing for the key; failing with the
     *         loader's exception (e.g. {@link LeaseRefusedException}), or with {@link LeaseRevokedException} if the
     *         owner revoked three leases of the key as soon as they were loaded
     * @throws ResourceClosedException if the cache is closed
     */
    public CompletableFuture<BorrowedLease> acquireAsync(K key) {
        if (closed) throw new ResourceClosedException("the lease cache is closed");
        return acquireAsync(key, 3);
    }

    private CompletableFuture<BorrowedLease> acquireAsync(K key, int attempts) {
        CompletableFuture<CachedLease> held = cache.get(key);
        // A hit borrows here, with no stage chained per call; the tasks waiting for a load, as it completes.
        if (held.isDone() && !held.isCompletedExceptionally()) return borrow(key, held, held.join(), attempts);
        return held.thenCompose(l -> borrow(key, held, l, attempts));
    }

    /** Borrows {@code l}, which the cache held under {@code key} as {@code held}, or looks again. */
    private CompletableFuture<BorrowedLease> borrow(K key, CompletableFuture<CachedLease> held, CachedLease l,
                                                    int attempts) {
        if (l == null) return CompletableFuture.completedFuture(null);
        // Let go (and perhaps released) since the lookup; a task waiting for a load always gets it: look again.
        if (!l.borrow()) return acquireAsync(key, attempts);
        if (l.segment.isUsable()) return CompletableFuture.completedFuture(new BorrowedLease(this, l));
        // Revoked or expired: one caller takes it out, every one asks again — a few times, if the peer keeps ending
        // new leases at once.
        if (l.giveBack()) release(l.segment);
        cache.asMap().remove(key, held);
        if (attempts > 1) return acquireAsync(key, attempts - 1);
        EndReason revoked = l.segment.revoked().getNow(null);
        return CompletableFuture.failedFuture(revoked != null ? new LeaseRevokedException(l.segment.leaseId(), revoked)
                : new IllegalStateException("the peer's leases of " + key + " ended as soon as they were loaded,"
                        + " three times: " + l.segment));
    }

    /**
     * {@link #acquireAsync} and waits, at most twice the endpoint's {@link RdmaEndpoint#requestTimeout()} (for a lease
     * to come free, then for the load), as the session's blocking forms wait: a platform thread takes the load's
     * completion from the queue itself rather than be woken for it. A segment borrowed after the wait gave up is given
     * back at once.
     *
     * @throws MooringTimeoutException if the load took longer (or the loader timed out), or no lease came free for it
     * @throws RuntimeException the loader's exception (e.g. {@link LeaseRefusedException}), as thrown; an
     *         {@link IllegalStateException} if interrupted (the interrupt is kept)
     */
    public BorrowedLease acquire(K key) {
        CompletionDispatcher.checkMayWait(); // before the load: refused, it must not borrow for nobody
        CompletableFuture<BorrowedLease> borrowed = acquireAsync(key);
        // What giving up cancels: not the load's own stage, which still borrows, and is then given back below.
        CompletableFuture<BorrowedLease> waited = borrowed.isDone() ? borrowed : borrowed.copy();
        try {
            return await.within(() -> waited, acquireTimeout, "a cached lease");
        } catch (MooringTimeoutException e) {
            throw new MooringTimeoutException("loading the lease of " + key + " took over " + acquireTimeout);
        } catch (IllegalStateException e) {
            if (!(e.getCause() instanceof TimeoutException t)) throw e;
            throw new MooringTimeoutException("loading the lease of " + key + ": " + t.getMessage());
        } finally {
            if (waited.isCancelled()) borrowed.thenAccept(b -> { if (b != null) b.close(); });
        }
    }

    /**
     * Drops the segment of {@code key}, if the cache holds one (e.g. one an operation found revoked): released now, or
     * when its last borrower is done.
     */
    public void invalidate(K key) {
        cache.synchronous().invalidate(key);
    }

    /** Hits, misses, loads, evictions (Caffeine's counters; an eviction's weight is in the cache's units). */
    public CacheStats stats() {
        return cache.synchronous().stats();
    }

    /** How many segments the cache holds, about (loads in flight and entries not yet cleaned up included). */
    public long estimatedSize() {
        return cache.synchronous().estimatedSize();
    }

    /**
     * Releases every segment it holds (without waiting for the peer's answers); a load in flight releases its segment
     * when it completes. Loading afterwards throws.
     */
    @Override
    public void close() {
        closed = true;
        cache.synchronous().invalidateAll();
    }

    /**
     * Asks the loader once a lease the peer would grant is taken: at once, on the acquiring thread — inside
     * Caffeine's computation for the key, so a miss costs the request and no hand-off — or, if the peer counts the
     * cache's whole bound now, on a thread of the cache's once one came free.
     */
    private CompletableFuture<CachedLease> load(K key, Function<? super K, CompletableFuture<RemoteSegment>> loader) {
        if (leases.tryAcquire()) return ask(key, loader);
        return CompletableFuture.supplyAsync(() -> {
            try {
                if (awaitLease()) return ask(key, loader);
                return CompletableFuture.<CachedLease>failedFuture(new MooringTimeoutException("no lease of the peer's"
                        + " came free in " + timeout + " to load " + key + ": the cache's segments are all in use"));
            } catch (InterruptedException e) {
                return CompletableFuture.<CachedLease>failedFuture(e);
            }
        }, executor).thenCompose(asked -> asked);
    }

    /**
     * Waits at most the request timeout for a lease to come free: for an eviction's release to be acknowledged. Caffeine
     * owes that eviction once it has applied the weight of the load that filled the cache; but a weight that reaches it
     * while its maintenance runs is left, on an executor other than the common pool, to the next cache activity — and
     * none may come while this waits. So the wait runs the cache's pending maintenance itself, now and every
     * {@link #MAINTENANCE_NANOS} until a lease comes free.
     */
    private boolean awaitLease() throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        for (long left = timeout.toNanos(); left > 0; left = end - System.nanoTime()) {
            cache.synchronous().cleanUp();
            if (leases.tryAcquire(Math.min(left, MAINTENANCE_NANOS), TimeUnit.NANOSECONDS)) return true;
        }
        return false;
    }

    /** Asks the loader for {@code key}'s segment, with a lease of the peer's taken for it. */
    private CompletableFuture<CachedLease> ask(K key, Function<? super K, CompletableFuture<RemoteSegment>> loader) {
        CompletableFuture<RemoteSegment> loaded;
        try {
            loaded = Objects.requireNonNull(loader.apply(key), "the loader's future");
        } catch (RuntimeException e) {
            loaded = CompletableFuture.failedFuture(e);
        }
        CompletableFuture<CachedLease> cached = loaded.whenComplete((s, failed) -> {
            if (failed != null || s == null) leases.release(); // the peer granted nothing
        }).thenApply(s -> s == null ? null : new CachedLease(s));
        cached.thenAccept(l -> {
            if (l == null) return;
            // A lease the owner revokes leaves at once (its release is the answer), not when it is next asked for.
            l.segment.revoked().thenRunAsync(() -> cache.synchronous().asMap().remove(key, l), executor);
            if (closed) cache.synchronous().asMap().remove(key, l); // loaded after close: nobody else takes it out
            // Caffeine applies this load's weight and expiry in its maintenance; one that reaches it while a
            // maintenance runs is left (off the common pool) to the next cache activity — in an idle cache none, so
            // the lease would outlive its margin and the owner expire it. So the maintenance runs once more, shortly
            // after Caffeine has taken the load in.
            CompletableFuture.delayedExecutor(MAINTENANCE_NANOS, TimeUnit.NANOSECONDS, executor)
                    .execute(cache.synchronous()::cleanUp);
        });
        return cached;
    }

    /**
     * Releases {@code s} and gives its lease back to the bound once the peer no longer counts it: when it
     * acknowledged the release (of a revoked lease, the release that answered the revocation), or — no answer came —
     * after twice its grace.
     */
    void release(RemoteSegment s) {
        CompletableFuture<Void> released;
        try {
            released = s.closeAsync();
        } catch (RuntimeException e) { // the session is gone: its end revoked the lease already
            released = CompletableFuture.failedFuture(e);
        }
        released.whenComplete((v, e) -> {
            if (e == null) {
                leases.release();
                return;
            }
            LOG.log(System.Logger.Level.DEBUG, "releasing " + s + " failed", e);
            CompletableFuture.delayedExecutor(ending.toNanos(), TimeUnit.NANOSECONDS).execute(leases::release);
        });
    }

    @Override
    public String toString() {
        return "LeaseCache[" + estimatedSize() + " segments]";
    }

    /** Configures a lease cache. Every setting has a default. */
    public static final class Builder<K> {
        private final RdmaSession session;
        private int maxLeases = LeaseLimits.DEFAULT.maxLeases();
        private long maxBytes = LeaseLimits.DEFAULT.maxBytes();
        private Duration margin = Duration.ofSeconds(2);
        private Duration grace = LeaseLimits.DEFAULT.grace();

        private Builder(RdmaSession session) {
            this.session = Objects.requireNonNull(session, "session");
        }

        /**
         * The peer's limits (default {@link LeaseLimits#DEFAULT}, what an endpoint grants unless configured): the
         * cache holds at most their {@code maxLeases} and {@code maxBytes}, and counts a lease whose release the peer
         * did not acknowledge for twice its {@code grace}. The peer counts every lease this host holds, in any
         * session: leave room for those kept elsewhere with {@link #maxLeases} and {@link #maxBytes}.
         */
        public Builder<K> limits(LeaseLimits peer) {
            Objects.requireNonNull(peer, "peer limits");
            maxLeases(peer.maxLeases());
            this.maxBytes = peer.maxBytes();
            this.grace = peer.grace();
            return this;
        }

        /** At most this many leases counted at once (at least 2: one for a load while the cache is full). */
        public Builder<K> maxLeases(int leases) {
            if (leases < 2) throw new IllegalArgumentException("max leases must be at least 2, was " + leases);
            this.maxLeases = leases;
            return this;
        }

        /** At most this many leased bytes held at once. */
        public Builder<K> maxBytes(long bytes) {
            if (bytes <= 0) throw new IllegalArgumentException("max bytes must be positive, was " + bytes);
            this.maxBytes = bytes;
            return this;
        }

        /**
         * How long before a segment's {@link RemoteSegment#remaining()} term ends the cache stops handing it out
         * (default 2 s): at least the time the application's operations on it take, plus about a second, since
         * Caffeine's timer releases an expired segment up to that much later. Leases shorter than this are loaded
         * for every call.
         */
        public Builder<K> margin(Duration margin) {
            if (margin.isNegative()) throw new IllegalArgumentException("the margin must not be negative, was " + margin);
            this.margin = margin;
            return this;
        }

        /**
         * A cache that asks {@code loader} for a key's segment: typically a request to the peer whose answer is an
         * offer ({@link RdmaSession#receiveOfferAsync()}) or {@link RdmaSession#requestRemoteAsync}. It is called on
         * the thread that missed, inside Caffeine's computation for the key (on a thread of the cache's if a lease had
         * to come free first), so it must not block: it starts the request and returns its future — a loader that has
         * to block runs itself elsewhere ({@code CompletableFuture.supplyAsync}). The future may fail, or complete
         * with null for a key the peer has nothing for: nothing is cached then, and {@link LeaseCache#acquire} returns
         * null (no warning is logged, as Caffeine does for a failed load).
         */
        public LeaseCache<K> build(Function<? super K, CompletableFuture<RemoteSegment>> loader) {
            return new LeaseCache<>(this, Objects.requireNonNull(loader, "loader"));
        }
    }
}
