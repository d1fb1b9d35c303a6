package io.mooring.lease;

import io.mooring.verbs.PeerLog;
import io.mooring.verbs.WorkCompletion;
import java.lang.System.Logger.Level;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Where the peer's control messages arrive: decodes each, answers a malformed one with an ERROR (a peer that keeps
 * sending garbage loses the session), and hands each to the part it is for. Answers, offers, REVOKEs and credits are
 * served at once, on the dispatcher: they only complete futures and post, and a hop to another thread would sit on the
 * path of every call waiting for them. The peer's requests — a grant binds a window, a release invalidates one — may
 * wait, so the session's agent thread serves them in order; their receive is posted again only once the agent takes
 * them, which bounds its queue.
 */
final class ControlInbox {
    private static final System.Logger LOG = System.getLogger(RdmaSession.class.getName());
    static final int MALFORMED_LIMIT = 16;

    private final SessionLink link;
    private final LeaseClient client;
    private final LeaseAgent owner;
    private final Offers offers;
    private final SessionMessages messages;
    private final SessionAgent agent;
    private final AtomicInteger malformed = new AtomicInteger();

    ControlInbox(SessionLink link, LeaseClient client, LeaseAgent owner, Offers offers, SessionMessages messages) {
        this.link = link;
        this.client = client;
        this.owner = owner;
        this.offers = offers;
        this.messages = messages;
        this.agent = new SessionAgent("mooring-agent-" + link.peerAddress());
    }

    /** Stops the agent thread after its current request (and waits for it, unless called from it). */
    void stop() {
        agent.stop();
    }

    boolean isAgentThread() {
        return agent.isAgentThread();
    }

    /** A completion of the control QP that no future claimed: a received message, or a failure. */
    void onCompletion(WorkCompletion wc) {
        if (!wc.isSuccess()) {
            link.lost("a control receive completed with " + wc.status());
            return;
        }
        int slot = (int) wc.wrId();
        Message m;
        try {
            m = MessageCodec.decode(link.channel().received(slot, wc.byteLength()));
        } catch (MalformedMessageException e) {
            repost(slot);
            PeerLog.log(LOG, Level.WARNING, "malformed control message from " + link.peerAddress() + ": "
                    + e.getMessage());
            link.tell(new Message.Error(e.requestId(), ErrorCodes.MALFORMED, e.getMessage()));
            if (malformed.incrementAndGet() > MALFORMED_LIMIT) {
                link.lost("the peer sent " + MALFORMED_LIMIT + " malformed messages");
            }
            return;
        }
        boolean waits = m instanceof Message.Request || m instanceof Message.Renew || m instanceof Message.Release;
        if (!waits) {
            if (repost(slot)) handle(m);
        } else if (!agent.offer(() -> {
            if (repost(slot)) handle(m);
        })) {
            link.lost("the agent's queue overflowed");
        }
    }

    private void handle(Message m) {
        try {
            switch (m) {
                case Message.Request r -> owner.grant(r);
                case Message.Renew r -> owner.renew(r);
                case Message.Release r -> owner.release(r);
                case Message.Revoke r -> client.revoke(r);
                case Message.Credit c -> messages.credited(c.messages());
                case Message.Offer o -> offers.offered(o);
                case Message.Grant g -> client.answered(g);
                case Message.Renewed r -> client.answered(r);
                case Message.ReleaseAck a -> client.answered(a);
                case Message.Error e -> client.answered(e);
            }
        } catch (RuntimeException e) {
            PeerLog.log(LOG, Level.WARNING, "serving " + m + " failed", e);
            link.tell(new Message.Error(m.requestId(), ErrorCodes.INVALID_REQUEST, String.valueOf(e.getMessage())));
        }
    }

    /** The message is decoded: its buffer takes the next one. False if the session broke meanwhile. */
    private boolean repost(int slot) {
        try {
            link.channel().repost(slot);
            return true;
        } catch (RuntimeException e) {
            link.lost("reposting a control receive failed: " + e.getMessage());
            return false;
        }
    }
}
