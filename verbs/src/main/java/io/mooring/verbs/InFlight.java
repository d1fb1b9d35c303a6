package io.mooring.verbs;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.values.WcOpcode;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * The outstanding work requests of one queue (send or receive) of one QP, in post order: a ring of slots that
 * grows, up to the queue's {@code depth}, to the most requests that were outstanding at once — so a QP made with a
 * deep queue that keeps a few requests in it holds a few slots (an endpoint's sessions are many), posting allocates
 * nothing once the ring has grown, and posting past the depth is refused.
 *
 * <p>A request's Mooring id is its sequence number (with {@link #RECEIVE_BIT} for the receive queue). A
 * completion for sequence {@code s} retires every slot up to {@code s}: on a reliable connection requests
 * complete in order, and unsignaled requests before a signaled one succeeded with it.
 *
 * <p>Two sides, no lock shared: posters claim slots at {@code tail} under {@link #lock}; the one poller of the
 * queue's CQ retires them from {@code head}. Each slot's state word says whose it is — FREE (the posters'), the
 * sequence posted in it (the poller's), RETIRING (being emptied) — and changes hands once each way: a release store
 * after the poster filled it, a compare-and-set by whoever retires it, a release store once emptied. A discard
 * (reset, destroy) retires by the same compare-and-set, so it and the poller never both retire a slot. Growing never
 * moves a slot: a full ring hands the sequences from {@code tail} on to a ring twice its size, and the poller finds
 * each sequence in the ring that took it ({@link #rings}, published before the first post into a new one).
 */
final class InFlight extends RequestSlots {
    /** What to do once a request retires (a window bind updates the window's key and binding). */
    interface Outcome {
        /** @param success whether the request succeeded (false also when it was discarded) */
        void completed(boolean success);
    }

    private static final long FREE = -1;
    private static final long RETIRING = -2;
    /** The slots a send queue starts with. */
    private static final int FIRST = 2;
    /**
     * The most slots a receive queue starts with: receives are posted in a burst, a window of them, and an outgrown
     * ring stays until its receives complete — a window of 16 grown from 2 kept 30 slots.
     */
    private static final int FIRST_RECEIVES = 16;
    private static final VarHandle STATE = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle HEAD;

    static {
        try {
            HEAD = MethodHandles.lookup().findVarHandle(InFlight.class, "head", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The slots of the sequences from {@code from} on, until a bigger ring takes over: sequence s in slot s % size. */
    private static final class Ring {
        final long from;
        final int size;
        final long[] state; // per slot: FREE, RETIRING or the sequence posted in it
        final long[] userWrId;
        final WcOpcode[] opcode;
        final RegionPins pins;
        final CompletableFuture<?>[] futures;
        final Outcome[] outcome;

        Ring(long from, int size) {
            this.from = from;
            this.size = size;
            state = new long[size];
            Arrays.fill(state, FREE);
            userWrId = new long[size];
            opcode = new WcOpcode[size];
            pins = new RegionPins(size);
            futures = new CompletableFuture<?>[size];
            outcome = new Outcome[size];
        }

        int slot(long seq) {
            return (int) (seq % size);
        }
    }

    private final String queue;
    private final boolean receive;
    private final int depth;
    /** The rings that may hold outstanding requests, oldest first; the last takes new ones. Replaced under lock. */
    private volatile Ring[] rings;
    private long tail; // next sequence to post; guarded by lock
    @SuppressWarnings("unused") // through HEAD: written by the poller only, read by outstanding()
    private long head; // the sequence after the last one the poller retired
    private volatile long discardedBelow; // every sequence below was discarded (the poller skips them)

    InFlight(String queue, boolean receive, int depth) {
        this.queue = queue;
        this.receive = receive;
        this.depth = depth;
        this.rings = new Ring[] {new Ring(0, Math.max(1, Math.min(depth, receive ? FIRST_RECEIVES : FIRST)))};
    }

    /**
     * Claims the next slot (caller holds {@link #lock}) and pins every region of {@code sgl} plus
     * {@code extra} (may be null) until the request retires.
     *
     * @return the id to post the request with
     * @throws QueueFullException if {@code depth} requests are outstanding
     * @throws io.mooring.lifecycle.ResourceClosedException if a region is closed (nothing is pinned then)
     */
    long claim(String verb, Object qp, long wrId, WcOpcode op, ScatterGatherList sgl, MemoryRegion extra,
               CompletableFuture<WorkCompletion> future, Outcome action) {
        // qp is named only when refused: building its name on every post would allocate
        if (closedReason != null) throw new ResourceClosedException(qp + ": " + closedReason);
        Ring[] now = rings;
        Ring r = now[now.length - 1];
        int slot = r.slot(tail);
        // The slot of sequence tail - size is free once that one retired: not free means size are outstanding in
        // this ring, and older rings may hold more.
        boolean full = outstandingLocked() >= depth;
        if (full || (long) STATE.getAcquire(r.state, slot) != FREE) {
            if (full || r.size == depth) throw new QueueFullException(verb, qp.toString(), queue, depth);
            r = grow(now, r);
            slot = r.slot(tail);
        }
        r.pins.pin(slot, sgl, extra);
        r.userWrId[slot] = wrId;
        r.opcode[slot] = op;
        r.futures[slot] = future;
        r.outcome[slot] = action;
        long seq = tail++;
        STATE.setRelease(r.state, slot, seq); // before the provider's post: its completion may be polled at once
        return receive ? seq | RECEIVE_BIT : seq;
    }

    /**
     * The index among {@code depth} that the next {@link #claim} takes (caller holds {@link #lock}): state a caller
     * keeps per index outside this table (a window ticket) is free to reuse, since every request {@code depth} or more
     * sequences back has retired.
     *
     * @throws QueueFullException if {@code depth} requests are outstanding
     */
    int nextSlot(String verb, Object qp) {
        // qp is named only when refused: building its name on every post would allocate
        if (closedReason != null) throw new ResourceClosedException(qp + ": " + closedReason);
        if (outstandingLocked() >= depth) throw new QueueFullException(verb, qp.toString(), queue, depth);
        return (int) (tail % depth);
    }

    /**
     * A ring twice the size of the full {@code newest} (at most the depth) takes the sequences from {@code tail} on;
     * the rings whose sequences all retired are dropped (caller holds {@link #lock}).
     */
    private Ring grow(Ring[] now, Ring newest) {
        Ring bigger = new Ring(tail, Math.min(depth, 2 * newest.size));
        long retired = Math.max((long) HEAD.getAcquire(this), discardedBelow);
        int live = 0;
        while (live < now.length - 1 && now[live + 1].from <= retired) live++; // now[live] still holds some
        Ring[] next = Arrays.copyOfRange(now, live, now.length + 1);
        next[next.length - 1] = bigger;
        rings = next;
        return bigger;
    }

    /** Gives back the slot just claimed when the provider refused the post (caller holds {@link #lock}). */
    void unclaim() {
        long seq = --tail;
        Ring[] now = rings;
        Ring r = now[now.length - 1];
        int slot = r.slot(seq);
        STATE.setRelease(r.state, slot, RETIRING); // no completion names a refused post: the poller never races here
        empty(r, slot, false);
    }

    @Override
    boolean retire(long id, boolean success, Retired into) {
        long seq = id & ~RECEIVE_BIT; // a shared receive queue's id (SHARED_BIT) is never in [from, from + depth)
        long from = Math.max((long) HEAD.getOpaque(this), discardedBelow);
        if (seq < from || seq - from >= depth) return false;
        Ring[] now = rings;
        for (long s = from; s < seq; s++) { // unsignaled predecessors: they succeeded before this one
            Ring r = ringOf(now, s);
            if (take(r, s)) empty(r, r.slot(s), true);
        }
        HEAD.setRelease(this, seq + 1);
        Ring r = ringOf(now, seq);
        if (!take(r, seq)) return false; // discarded by a reset or destroy meanwhile
        int slot = r.slot(seq);
        into.set(r.userWrId[slot], r.opcode[slot], r.futures[slot]);
        empty(r, slot, success);
        return true;
    }

    /** The ring that took sequence {@code seq} (one not retired yet). */
    private static Ring ringOf(Ring[] now, long seq) {
        int i = now.length - 1;
        while (i > 0 && now[i].from > seq) i--;
        return now[i];
    }

    @Override
    void discardAllLocked(RuntimeException why) {
        for (Ring r : rings) {
            for (int slot = 0; slot < r.size; slot++) {
                long seq = (long) STATE.getAcquire(r.state, slot);
                if (seq < 0 || !take(r, seq)) continue; // free, or the poller is retiring it
                fail(r.futures[slot], why);
                empty(r, slot, false);
            }
        }
        discardedBelow = tail;
    }

    /**
     * Fails the futures of the outstanding requests but keeps the requests (caller holds {@link #lock}): the NIC may
     * still work on them, so their regions stay pinned until a poll, reset or destroy retires them.
     */
    void failFuturesLocked(RuntimeException why) {
        for (Ring r : rings) {
            for (int slot = 0; slot < r.size; slot++) {
                if ((long) STATE.getAcquire(r.state, slot) >= 0) fail(r.futures[slot], why);
            }
        }
    }

    @Override
    int outstandingLocked() {
        return (int) Math.max(0, tail - Math.max((long) HEAD.getAcquire(this), discardedBelow));
    }

    /** Takes the slot of sequence {@code seq} in {@code r} for retiring, if it still holds that request. */
    private static boolean take(Ring r, long seq) {
        return STATE.compareAndSet(r.state, r.slot(seq), seq, RETIRING);
    }

    /** Runs the slot's outcome, releases its regions and hands it back to the posters (caller took it). */
    private static void empty(Ring r, int slot, boolean success) {
        Outcome o = r.outcome[slot];
        if (o != null) o.completed(success);
        r.pins.unpin(slot);
        r.futures[slot] = null;
        r.outcome[slot] = null;
        r.opcode[slot] = null;
        STATE.setRelease(r.state, slot, FREE);
    }
}
