package io.mooring.verbs.soft;

import io.mooring.verbs.QpInfo;
import java.security.SecureRandom;
import java.util.concurrent.TimeUnit;

/**
 * How one soft QP reaches its peer: within one device a direct call of the peer's responder ({@link InJvmLink});
 * across devices one TCP connection per QP pair, dialed at RTR by the side with the smaller (LID, QPN) and accepted
 * by the other's listener. A connection is admitted only with the QP's token (a secret drawn anew at every reset,
 * which reaches the peer only in its {@code QpInfo}), and superseded by a newer dial or a reset: the two ends must
 * keep the same connection, or requests would lose their answers.
 */
final class QpLink {
    /** How long a requester waits for the TCP connection to its peer to come up before counting retries. */
    private static final long LINK_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);
    /** Draws the tokens a peer's dial must present: anyone on the host can connect to the fabric's port. */
    private static final SecureRandom TOKENS = new SecureRandom();

    private final SoftQp qp;
    private volatile Link link;
    private final Object linkChanged = new Object();
    private int connection;            // guarded by linkChanged: bumped by every reset and every dial of ours
    private TcpLink.Hello newestDial;  // guarded by linkChanged: of the last connection attached; survives resets
    private volatile long token = TOKENS.nextLong(); // written under linkChanged: what the peer's dial presents
    private volatile long previousToken; // the token before the last reset: a late dial of the old peer presents it
    private volatile boolean linkExpected; // a TCP connection to the peer is being set up

    QpLink(SoftQp qp) {
        this.qp = qp;
    }

    /** What the peer's dial must present. */
    long token() {
        return token;
    }

    /** A modify to RTR: whether a TCP connection is now being set up (the requester waits for it once). */
    void expect(boolean overTcp) {
        linkExpected = overTcp;
    }

    /**
     * Whether {@code dial}, a dial of the peer's, knows this QP's token, which only the peer's {@code QpInfo}
     * carried: a third process on the host could otherwise replace the connection and act as the peer.
     */
    boolean admits(TcpLink.Hello dial) {
        return dial.token() == token;
    }

    /**
     * Whether a refused {@code dial} is only late: a dial the previous peer started before this QP was reset, which
     * presents the token of that connection. Refused all the same, but not worth a warning.
     */
    boolean isStale(TcpLink.Hello dial) {
        return dial.token() == previousToken;
    }

    /** Numbers a dial of ours, made at RTR (see {@link #attach}). */
    int nextDial() {
        synchronized (linkChanged) {
            return ++connection;
        }
    }

    /**
     * A TCP connection to the peer is up (dialed by us or accepted from it); false if it is refused as superseded.
     * A dial can finish after a reset and reconnect started the next one. One of ours is refused unless it is our
     * latest and no reset came since, so we never keep a connection past the connect it was made for; one of the
     * peer's is refused if a later dial of the peer's got here first. Otherwise the two ends could keep different
     * connections whose other halves get closed, or replace one under a request the peer executed and lose its
     * answer: requests would end in RETRY_EXC_ERR.
     */
    boolean attach(Link l, TcpLink.Hello dial) {
        Link old;
        synchronized (linkChanged) {
            boolean ours = dial.sourceQpn() == qp.qpNumber() && dial.sourceLid() == qp.device.lid()
                    && dial.sourceGid().equals(qp.device.gid());
            if (!ours && !admits(dial)) return false; // admitted before a reset changed the token
            if (ours ? dial.dial() != connection
                    : newestDial != null && newestDial.sameDialer(dial) && dial.dial() <= newestDial.dial()) {
                return false;
            }
            newestDial = dial;
            old = link;
            link = l;
            linkChanged.notifyAll();
        }
        if (old != null && old != l) old.close();
        return true;
    }

    /** The TCP connection went down. Under the lock: a connection attached meanwhile must not be forgotten. */
    void detach(Link l) {
        synchronized (linkChanged) {
            if (link == l) link = null;
        }
    }

    /** The connection ends (a reset or destroy): a dial under way is refused, and the next peer needs a new token. */
    void drop() {
        Link l;
        synchronized (linkChanged) {
            connection++; // a dial of ours still under way was for the connection dropped here
            previousToken = token;
            token = TOKENS.nextLong(); // and the peer of the next connection gets a new one
            l = link;
            link = null;
        }
        if (l != null) l.close();
    }

    /** Whether {@code l} is the connection this QP uses now (not one a reset or a newer dial replaced). */
    boolean carries(Link l) {
        return link == l;
    }

    /** Closes the connection to the peer, as the death of the peer's process does. */
    void closeLink() {
        Link l = link;
        if (l != null) l.close();
    }

    /** Waits (once per connection attempt) for a TCP connection being dialed; true if one came up. */
    boolean awaitLink() throws InterruptedException {
        long deadline = System.nanoTime() + LINK_WAIT_NANOS;
        synchronized (linkChanged) {
            while (link == null && !qp.isDestroyed() && linkExpected) {
                long left = deadline - System.nanoTime();
                if (left <= 0) break;
                TimeUnit.NANOSECONDS.timedWait(linkChanged, left);
            }
            linkExpected = false; // if it did not come now, the peer is unreachable: retries count from here
            return link != null;
        }
    }

    /** The connection requests go over now: the TCP one, or within one device a direct one made on first use. */
    Link current() {
        Link l = link;
        if (l != null) return l;
        QpInfo peer = qp.remote();
        if (peer == null || !qp.device.isSelf(peer.gid(), peer.lid())) return null; // TCP: not connected yet
        l = new InJvmLink(qp.device, peer.qpn());
        link = l;
        return l;
    }
}
