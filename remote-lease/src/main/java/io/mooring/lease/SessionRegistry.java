package io.mooring.lease;

import io.mooring.verbs.QueuePair;
import io.mooring.verbs.WorkCompletion;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * An endpoint's sessions: which are listed (and hold a slot), which a peer ended while they still keep messages nobody
 * took, and whose QP each completion of the endpoint's one CQ belongs to.
 */
final class SessionRegistry {
    private static final System.Logger LOG = System.getLogger(RdmaEndpoint.class.getName());

    private final Consumer<RdmaSession> freeSlot;
    private final Map<Integer, RdmaSession> byQpNumber = new ConcurrentHashMap<>();
    private final Set<RdmaSession> sessions = ConcurrentHashMap.newKeySet();
    /**
     * Sessions a peer ended that still hold messages the application has not taken, and that it has not closed: no
     * longer served, but each still holding its slot, and closed with the endpoint, which frees those messages' blocks.
     */
    private final Set<RdmaSession> endedHoldingMessages = ConcurrentHashMap.newKeySet();

    /** {@code freeSlot} gives a session's slot (and its peer's) back, once per listed session. */
    SessionRegistry(Consumer<RdmaSession> freeSlot) {
        this.freeSlot = freeSlot;
    }

    /**
     * Lists a session whose handshake succeeded. A peer may end it before it is listed (it hangs up at once): that
     * end's unlisting found nothing, so it is unlisted here.
     */
    void list(RdmaSession session) {
        sessions.add(session);
        if (session.isTornDown()) unlist(session);
    }

    /** The sessions listed now. */
    Set<RdmaSession> sessions() {
        return Set.copyOf(sessions);
    }

    /** Completions of {@code qps} go to {@code session}. */
    void route(RdmaSession session, QueuePair... qps) {
        for (QueuePair qp : qps) byQpNumber.put(qp.number(), session);
    }

    void unroute(QueuePair... qps) {
        for (QueuePair qp : qps) byQpNumber.remove(qp.number());
    }

    /** Hands {@code wc} to the session of its QP (the endpoint's dispatcher calls this). */
    void deliver(WorkCompletion wc) {
        RdmaSession session = byQpNumber.get(wc.qpNumber());
        if (session != null) session.onCompletion(wc);
        else LOG.log(Level.DEBUG, "a completion of no live session: " + wc);
    }

    /**
     * {@code session} ended. One that keeps messages of its peer's nobody took yet ({@code holdsMessages}) keeps its
     * slot — and the peer's account — until they are taken or it is closed (the endpoint's close frees them at the
     * latest): the slots bound the receive blocks a peer can make this side hold, which would otherwise grow by a
     * window each time it connects, sends and hangs up while the application takes nothing.
     */
    void removed(RdmaSession session, boolean holdsMessages) {
        if (holdsMessages && sessions.remove(session)) {
            endedHoldingMessages.add(session);
            if (!session.holdsUntakenMessages()) messagesTaken(session); // the last one was taken meanwhile
        } else {
            unlist(session);
            messagesTaken(session);
        }
    }

    /**
     * The application took the last message {@code session} kept after its peer's end, or closed it: its slot is free.
     * A session that still ends is not kept here yet; its end's {@link #removed} decides.
     */
    void messagesTaken(RdmaSession session) {
        if (endedHoldingMessages.remove(session)) freeSlot.accept(session);
    }

    /** Closes every session, the listed ones and those kept for their messages. */
    void closeAll() {
        sessions().forEach(RdmaSession::close);
        List.copyOf(endedHoldingMessages).forEach(RdmaSession::close);
    }

    /** Gives the slot of a listed session back, once: whichever of its end and its handshake comes last does it. */
    private void unlist(RdmaSession session) {
        if (sessions.remove(session)) freeSlot.accept(session);
    }
}
