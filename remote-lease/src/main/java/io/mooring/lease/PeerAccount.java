package io.mooring.lease;

import java.net.InetAddress;
import java.util.concurrent.TimeUnit;

/**
 * What one peer — everything connecting from one address — holds across all its sessions with an endpoint, so that
 * opening more sessions never buys more than the {@link LeaseLimits}: its leased bytes and leases, and how soon it
 * may connect again after a session of its ended in failure (the wait doubles with each failure, from the
 * endpoint's first backoff up to {@link #MAX_BACKOFF_NANOS}, and is forgotten after a clean end) — so a peer guessing
 * keys pays a growing wait for every wrong guess, not one reconnect.
 */
final class PeerAccount {
    static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final String name;
    private final long firstBackoffNanos;
    private long leasedBytes;    // guarded by this
    private int leases;          // guarded by this
    private long backoffNanos;   // guarded by this
    private long barredUntil;    // guarded by this; System.nanoTime()
    private long failures;       // guarded by this: sessions lost (that barred the peer) so far
    private int sessions;        // guarded by this: sessions set up or being set up that hold the account
    private boolean forgotten;   // guarded by this: the endpoint dropped it; a fresh account takes its place

    PeerAccount(InetAddress address, long firstBackoffNanos) {
        this(address.getHostAddress(), firstBackoffNanos);
    }

    PeerAccount(String name, long firstBackoffNanos) {
        this.name = name;
        this.firstBackoffNanos = firstBackoffNanos;
    }

    String name() {
        return name;
    }

    /** Counts a lease of {@code bytes} against {@code limits}, or refuses it naming the limit. */
    synchronized void reserve(long bytes, LeaseLimits limits) {
        if (leases >= limits.maxLeases()) {
            throw new LeaseRefusedException(ErrorCodes.LIMIT_EXCEEDED, "peer " + name + " holds " + leases
                    + " leases across its sessions, the limit is " + limits.maxLeases());
        }
        if (leasedBytes + bytes > limits.maxBytes()) {
            throw new LeaseRefusedException(ErrorCodes.LIMIT_EXCEEDED, "peer " + name + " holds " + leasedBytes
                    + " leased bytes across its sessions; " + bytes + " more exceed the limit of " + limits.maxBytes());
        }
        leases++;
        leasedBytes += bytes;
    }

    synchronized void unreserve(long bytes) {
        leases--;
        leasedBytes -= bytes;
    }

    synchronized long leasedBytes() {
        return leasedBytes;
    }

    synchronized int leases() {
        return leases;
    }

    /** A session of this peer was lost (an access error, a protocol violation, a broken connection). */
    synchronized void failed() {
        if (firstBackoffNanos == 0) return;
        backoffNanos = backoffNanos == 0 ? firstBackoffNanos : Math.min(MAX_BACKOFF_NANOS, 2 * backoffNanos);
        barredUntil = System.nanoTime() + backoffNanos;
        failures++;
    }

    /** How many of this peer's sessions were lost so far: a session notes it when it is set up. */
    synchronized long failures() {
        return failures;
    }

    /**
     * A session of this peer, set up when {@link #failures()} was {@code failuresAtStart}, ended cleanly: earlier
     * failures are forgiven (the next one waits the first backoff again) — unless one came while it was open, or a
     * peer would buy forgiveness for every wrong guess by closing a session it kept aside. A bar in force stays.
     */
    synchronized void endedCleanly(long failuresAtStart) {
        if (failures == failuresAtStart) backoffNanos = 0;
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
        if (sessions > 0 || leases > 0 || failures > 0 && nowNanos - barredUntil < MAX_BACKOFF_NANOS) return false;
        forgotten = true;
        return true;
    }

    /** How long the peer must still wait before a new session is accepted; 0 or less if it may connect now. */
    synchronized long barredForNanos() {
        return failures == 0 ? 0 : barredUntil - System.nanoTime();
    }
}
