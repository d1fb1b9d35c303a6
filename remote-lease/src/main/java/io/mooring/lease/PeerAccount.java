package io.mooring.lease;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What one peer — everything connecting from one address prefix ({@link PeerPrefix}) — holds across all its sessions
 * with an endpoint, so that opening more sessions never buys more than the {@link LeaseLimits}: its leased bytes (the
 * same bytes leased over several sessions — one table offered to each — counted once) and leases, its sessions and handshakes, and how soon it may connect again after a session of its was lost. The wait
 * doubles with each loss, from the endpoint's first backoff up to {@link #MAX_BACKOFF_NANOS}, and is forgiven by time
 * only — once the peer has lost no session for {@link #MAX_BACKOFF_NANOS} after its last bar ended — never by a session
 * it opens and closes, or a guessing peer would buy forgiveness for every wrong guess with one clean session.
 */
final class PeerAccount {
    static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final String name;
    private final long firstBackoffNanos;
    private long leasedBytes;    // guarded by this
    /** Leases per leased range of memory, guarded by this: a range's bytes count once however many leases it has. */
    private final Map<Range, Integer> ranges = new HashMap<>();
    private int leases;          // guarded by this
    private long backoffNanos;   // guarded by this
    private long barredUntil;    // guarded by this; System.nanoTime()
    private long failures;       // guarded by this: sessions lost (that barred the peer) so far
    private int sessions;        // guarded by this: sessions set up or being set up that hold the account
    private int handshakes;      // guarded by this: handshakes of the peer's running now (after its HELLO)
    private boolean forgotten;   // guarded by this: the endpoint dropped it; a fresh account takes its place

    PeerAccount(String name, long firstBackoffNanos) {
        this.name = name;
        this.firstBackoffNanos = firstBackoffNanos;
    }

    String name() {
        return name;
    }

    /** The bytes {@code [address, address + length)} of this side's memory, as leased. */
    record Range(long address, long length) {}

    /** Counts a lease of {@code range} against {@code limits}, or refuses it naming the limit. */
    synchronized void reserve(Range range, LeaseLimits limits) {
        if (leases >= limits.maxLeases()) {
            throw new LeaseRefusedException(ErrorCodes.LIMIT_EXCEEDED, "peer " + name + " holds " + leases
                    + " leases across its sessions, the limit is " + limits.maxLeases());
        }
        long bytes = ranges.containsKey(range) ? 0 : range.length();
        if (leasedBytes + bytes > limits.maxBytes()) {
            throw new LeaseRefusedException(ErrorCodes.LIMIT_EXCEEDED, "peer " + name + " holds " + leasedBytes
                    + " leased bytes across its sessions; " + bytes + " more exceed the limit of " + limits.maxBytes());
        }
        ranges.merge(range, 1, Integer::sum);
        leases++;
        leasedBytes += bytes;
    }

    synchronized void unreserve(Range range) {
        leases--;
        if (ranges.merge(range, -1, Integer::sum) == 0) {
            ranges.remove(range);
            leasedBytes -= range.length();
        }
    }

    synchronized long leasedBytes() {
        return leasedBytes;
    }

    synchronized int leases() {
        return leases;
    }

    /**
     * A session of this peer was lost (an access error, a protocol violation, a broken connection, an end without
     * goodbye): the wait doubles, unless the last bar ended {@link #MAX_BACKOFF_NANOS} ago or longer.
     */
    synchronized void failed() {
        if (firstBackoffNanos == 0) return;
        long now = System.nanoTime();
        if (failures > 0 && now - barredUntil >= MAX_BACKOFF_NANOS) backoffNanos = 0; // forgiven by time
        backoffNanos = backoffNanos == 0 ? firstBackoffNanos : Math.min(MAX_BACKOFF_NANOS, 2 * backoffNanos);
        barredUntil = now + backoffNanos;
        failures++;
    }

    /** Starts a handshake of the peer's once fewer than {@code max} run; false if none ended by {@code deadline}. */
    synchronized boolean startHandshake(int max, long deadline) throws InterruptedException {
        while (handshakes >= max) {
            long left = deadline - System.nanoTime();
            if (left <= 0) return false;
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        handshakes++;
        return true;
    }

    synchronized void handshakeDone() {
        handshakes--;
        notifyAll();
    }

    /** A session of the peer's is being set up: it holds the account until {@link #leave()}; false if forgotten. */
    synchronized boolean enter() {
        if (forgotten) return false;
        sessions++;
        return true;
    }

    synchronized void leave() {
        sessions--;
    }

    /** Whether the peer holds more than {@code max} sessions, those being set up included. */
    synchronized boolean holdsMoreThan(int max) {
        return sessions > max;
    }

    /**
     * Marks the account forgotten if it holds nothing — no session, no lease — and its last loss's bar ended at least
     * {@link #MAX_BACKOFF_NANOS} ago: forgetting it then costs a guessing peer no wait it would not have paid anyway
     * (its wait never grows past that bound), and the endpoint keeps no account per address that ever connected.
     */
    synchronized boolean forget(long nowNanos) {
        if (sessions > 0 || handshakes > 0 || leases > 0) return false;
        if (failures > 0 && nowNanos - barredUntil < MAX_BACKOFF_NANOS) return false;
        forgotten = true;
        return true;
    }

    /** How long the peer must still wait before a new session is accepted; 0 or less if it may connect now. */
    synchronized long barredForNanos() {
        return failures == 0 ? 0 : barredUntil - System.nanoTime();
    }
}
