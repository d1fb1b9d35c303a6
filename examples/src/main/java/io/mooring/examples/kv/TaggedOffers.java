package io.mooring.examples.kv;

import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Hands each offer the server makes to the GET that asked for it, by the tag the GET carried: with many GETs in flight
 * on one session, offers arrive in the order the server made them, not the order of the calls. An offer whose GET gave
 * up is released.
 */
final class TaggedOffers {
    private final Map<Long, CompletableFuture<RemoteSegment>> waiting = new ConcurrentHashMap<>();
    private final AtomicLong tags = new AtomicLong();
    private final RdmaSession session;

    TaggedOffers(RdmaSession session) {
        this.session = session;
        takeNext();
    }

    /** A new tag, whose offer {@link #of} returns. */
    long expect() {
        long tag = tags.incrementAndGet();
        waiting.put(tag, new CompletableFuture<>());
        return tag;
    }

    /** The offer tagged {@code tag}, failing after {@link KvRequests#WAIT}. */
    CompletableFuture<RemoteSegment> of(long tag) {
        CompletableFuture<RemoteSegment> offer = waiting.get(tag);
        if (offer == null) return CompletableFuture.failedFuture(new IllegalStateException("no GET awaits tag " + tag));
        return KvRequests.within(offer, "the offer of the value a GET (tag " + tag + ") asked for");
    }

    /** No offer tagged {@code tag} is awaited any more: it was taken, or none comes. */
    void forget(long tag) {
        waiting.remove(tag);
    }

    /** The GET of {@code tag} failed: an offer that came for it is released, one that comes later too. */
    void drop(long tag) {
        CompletableFuture<RemoteSegment> offer = waiting.remove(tag);
        if (offer != null && !offer.cancel(false)) offer.thenAccept(RemoteSegment::closeAsync);
    }

    private void takeNext() {
        session.receiveOfferAsync().whenComplete((segment, error) -> {
            if (error != null) { // the session ended: no more offers
                waiting.values().forEach(f -> f.completeExceptionally(error));
                return;
            }
            CompletableFuture<RemoteSegment> asked = waiting.get(segment.tag());
            if (asked == null || !asked.complete(segment)) segment.closeAsync(); // its GET gave up
            takeNext();
        });
    }
}
