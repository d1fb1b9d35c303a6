package io.mooring.lease;

import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.lifecycle.Resource;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * The holder's side of a session: asks the peer for leases (REQUEST), renews (RENEW) and releases (RELEASE) them,
 * pairs the peer's answers with the calls waiting for them, and keeps the state of every lease of the peer's this side
 * holds — the {@link RemoteSegment}s, which reach the session through here. The owner's REVOKE or the session's end
 * marks a lease unusable at once; on a REVOKE the lease is released once its accesses in flight have completed.
 */
final class LeaseClient {
    private static final System.Logger LOG = System.getLogger(RdmaSession.class.getName());
    /**
     * This side's control requests (REQUEST, RENEW, RELEASE) waiting for the peer's answer, at most: a peer that takes
     * them and never answers would otherwise hold each for the request timeout, however many the application makes.
     */
    static final int MAX_PENDING = 1024;
    /** The largest alignment a REQUEST may ask for: a page. */
    static final long MAX_ALIGNMENT = 4096;

    private final SessionLink link;
    private final CompletionQueue cq;
    private final Duration requestTimeout;
    /** How the blocking forms of the segments wait. */
    final Await await;
    /** Posts a WRITE with immediate, spending a message credit. */
    private final Function<WorkRequest, CompletableFuture<WorkCompletion>> writeWithImm;
    private final Map<Long, CompletableFuture<Message>> pending = new ConcurrentHashMap<>();
    /**
     * REQUESTs that timed out, whose GRANT may still come (at most {@value #MAX_PENDING}): only a GRANT of one of these
     * is released, so that a peer sending GRANTs for requests never made cannot fill this side's outbox with RELEASEs.
     */
    private final Set<Long> gaveUp = ConcurrentHashMap.newKeySet();
    private final Map<Long, RemoteSegment.State> remote = new ConcurrentHashMap<>();
    private final AtomicLong leakedSegments = new AtomicLong();

    LeaseClient(SessionLink link, CompletionQueue cq, Await await, Duration requestTimeout,
                Function<WorkRequest, CompletableFuture<WorkCompletion>> writeWithImm) {
        this.link = link;
        this.cq = cq;
        this.await = await;
        this.requestTimeout = requestTimeout;
        this.writeWithImm = writeWithImm;
    }

    /** Asks for a lease of {@code size} bytes at an {@code alignment}; the future fails with the peer's refusal. */
    CompletableFuture<RemoteSegment> request(long size, long alignment, Duration duration, Set<Access> access) {
        long sent = System.nanoTime();
        return call(new Message.Request(link.nextRequestId(), size, alignment, Access.mask(access),
                duration.toNanos())).thenApply(answer -> {
                    if (!(answer instanceof Message.Grant g)) throw refusal(answer);
                    return segment(g.leaseId(), localDeadline(sent, g.durationNanos()), g.address(), g.length(),
                            g.rkey(), Set.copyOf(access), 0);
                });
    }

    /** The segment of a lease the peer offered. */
    RemoteSegment offered(Message.Offer o) {
        return segment(o.leaseId(), localDeadline(System.nanoTime(), o.durationNanos()), o.address(), o.length(),
                o.rkey(), Access.of(o.access()), o.tag());
    }

    private RemoteSegment segment(long leaseId, long deadline, long address, long length, int rkey, Set<Access> access,
                                  long tag) {
        var state = new RemoteSegment.State(leaseId, deadline, cq.newFuture());
        remote.put(leaseId, state);
        return new RemoteSegment(this, state, address, length, rkey, access, tag);
    }

    /** A margin before the owner's deadline: our clock started before the owner's did, and a request takes time. */
    private static long localDeadline(long sentNanos, long durationNanos) {
        return sentNanos + durationNanos - Math.min(durationNanos / 10, TimeUnit.MILLISECONDS.toNanos(250));
    }

    CompletableFuture<Void> renew(RemoteSegment.State state, Duration duration, long sentNanos) {
        return call(new Message.Renew(link.nextRequestId(), state.leaseId, duration.toNanos())).thenAccept(a -> {
            if (!(a instanceof Message.Renewed r)) throw refusal(a);
            state.deadlineNanos = localDeadline(sentNanos, r.durationNanos());
        });
    }

    /**
     * Releases a lease of the peer's once its accesses are done: from {@link RemoteSegment#close()} or to answer the
     * owner's REVOKE, both waiting for the acknowledgement — which the owner sends once it no longer counts the lease
     * against this host's limits — or, not waiting (no entry in the table of unanswered requests, no timer), from its
     * Cleaner or for an offer past the backlog. Whichever comes first sends the RELEASE; the others get its outcome,
     * the state's {@code released}. A lease the owner already ended counts as released.
     */
    CompletableFuture<Void> release(RemoteSegment.State s, boolean wait) {
        // Gone from the map: its RELEASE went out already, or the session ended (which completed the future).
        if (remote.remove(s.leaseId) == null) return s.released;
        try {
            if (!link.isUp()) {
                s.released.complete(null);
                return s.released;
            }
            var release = new Message.Release(link.nextRequestId(), s.leaseId);
            CompletableFuture<Message> answered = null;
            if (wait) {
                try {
                    answered = call(release);
                } catch (FlowControlException e) { // the peer answers nothing: released all the same, not waited for
                    LOG.log(Level.DEBUG, "releasing lease " + s.leaseId + " without waiting: " + e.getMessage());
                }
            }
            if (answered == null) {
                link.tell(release); // a peer that leaves our control messages untaken loses the session, as for a reply
                s.released.complete(null);
                return s.released;
            }
            answered.whenComplete((answer, e) -> {
                boolean alreadyEnded = answer instanceof Message.Error no && no.code() == ErrorCodes.UNKNOWN_LEASE;
                if (e != null) s.released.completeExceptionally(e);
                else if (answer instanceof Message.ReleaseAck || alreadyEnded) s.released.complete(null);
                else s.released.completeExceptionally(refusal(answer));
            });
        } catch (RuntimeException e) { // the session failed meanwhile
            s.released.completeExceptionally(e);
        }
        return s.released;
    }

    /**
     * Sends a control request; the future completes with its answer, or fails after the request timeout with a
     * {@link MooringTimeoutException}: the session lives on, and an answer coming later is dropped (a lease it grants
     * released, {@link #answered}).
     *
     * @throws FlowControlException if {@value #MAX_PENDING} requests already wait for the peer's answer
     */
    CompletableFuture<Message> call(Message request) {
        link.checkUsable();
        if (pending.size() >= MAX_PENDING) { // a check, not a reservation: concurrent callers may pass it together
            throw new FlowControlException(MAX_PENDING + " control requests already wait for the peer's answer (each"
                    + " at most " + requestTimeout + "): " + link.peerAddress() + " answers none of them");
        }
        CompletableFuture<Message> answer = cq.newFuture();
        pending.put(request.requestId(), answer);
        link.send(request).exceptionally(e -> {
            answer.completeExceptionally(new SessionLostException("sending " + request.getClass().getSimpleName()
                    + " to " + link.peerAddress() + " failed: " + e));
            return null;
        });
        return answer.orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS).handle((m, e) -> {
            pending.remove(request.requestId());
            if (e == null) return m;
            Throwable cause = e instanceof CompletionException ? e.getCause() : e;
            if (cause instanceof TimeoutException) {
                if (request instanceof Message.Request && gaveUp.size() < MAX_PENDING) gaveUp.add(request.requestId());
                throw new MooringTimeoutException("no answer to " + request.getClass().getSimpleName()
                        .toUpperCase(Locale.ROOT) + " " + request.requestId() + " within the request timeout ("
                        + requestTimeout + ") from " + link.peerAddress() + "; the session goes on");
            }
            if (cause instanceof RuntimeException r) throw r;
            throw new SessionLostException("session to " + link.peerAddress() + " failed: " + cause);
        });
    }

    static LeaseRefusedException refusal(Message answer) {
        if (answer instanceof Message.Error e) return new LeaseRefusedException(e.code(), "peer refused: " + e.message());
        return new LeaseRefusedException(ErrorCodes.INVALID_REQUEST, "peer answered " + answer);
    }

    /**
     * The peer's answer to one of this side's requests (GRANT, RENEWED, RELEASE_ACK, ERROR). A GRANT for a REQUEST
     * that timed out is released at once, as its segment's close would: else the owner would count the lease against
     * this host's limits until it expires. A late RENEWED made nothing this side does not hold already (the segment is
     * still open, or its RELEASE went out); the other answers made nothing at all.
     */
    void answered(Message m) {
        CompletableFuture<Message> waiting = pending.get(m.requestId());
        if (waiting != null && waiting.complete(m)) return;
        // Its caller gave up just now (the timeout won the race) or before.
        boolean late = gaveUp.remove(m.requestId()) || waiting != null;
        if (m instanceof Message.Grant g && late) {
            LOG.log(Level.DEBUG, "releasing lease " + g.leaseId() + ", granted after its request timed out");
            link.tell(new Message.Release(link.nextRequestId(), g.leaseId()));
        } else {
            LOG.log(Level.DEBUG, "answer to no pending request: " + m);
        }
    }

    /**
     * The owner asks to end a lease: its segment refuses new accesses at once, and once those in flight have completed
     * the lease is released — the owner's cue to revoke the key — and the acknowledgement awaited, so that closing the
     * segment returns once the owner no longer counts the lease. A lease this side no longer holds is being released.
     */
    void revoke(Message.Revoke r) {
        RemoteSegment.State s = remote.get(r.leaseId());
        if (s != null) s.revoke(EndReason.of(r.reason())).thenRun(() -> release(s, true));
    }

    /** The session ended: every waiting call fails, every segment is unusable, and its lease ended with the session. */
    void linkLost(String reason) {
        pending.values().forEach(f -> f.completeExceptionally(new SessionLostException(reason)));
        gaveUp.clear();
        for (Long id : remote.keySet()) {
            RemoteSegment.State s = remote.remove(id);
            if (s == null) continue; // its RELEASE went out meanwhile: its answer fails with the session
            s.revoke(EndReason.SESSION_LOST);
            s.released.complete(null);
        }
    }

    /** Requests of this side's still waiting for the peer's answer (tests). */
    int pendingRequests() {
        return pending.size();
    }

    // ---- what the segments reach through here ----------------------------------------------------------------

    /** The segment's resource in the lifecycle graph, a child of the session's. */
    Resource track(RemoteSegment.State state) {
        return link.child("remote-segment", "lease " + state.leaseId + " from " + link.peerAddress(),
                new RemoteSegment.Release(this, state));
    }

    /** A segment was dropped without close() (the graph reported it): counted while the session lives. */
    void leaked() {
        if (link.isUp()) leakedSegments.incrementAndGet();
    }

    long leakedSegments() {
        return leakedSegments.get();
    }

    QueuePair queuePair() {
        return link.dataQp();
    }

    void checkUsable() {
        link.checkUsable();
    }

    String lostReason() {
        return link.lostReason();
    }

    CompletableFuture<WorkCompletion> writeWithImm(WorkRequest write) {
        return writeWithImm.apply(write);
    }
}
