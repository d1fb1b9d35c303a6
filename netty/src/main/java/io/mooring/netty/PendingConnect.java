package io.mooring.netty;

import io.mooring.lease.RdmaSession;
import io.netty.channel.ChannelPromise;
import io.netty.channel.ConnectTimeoutException;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * A {@link MooringChannel}'s connect under way (the loop's thread only): its promise and its timeout. It ends once — the
 * session made, a failure, {@code CONNECT_TIMEOUT_MILLIS} passed, the promise cancelled or the channel closed — and
 * without a session the channel closes; a session made after the end is closed.
 */
final class PendingConnect {
    private final MooringChannel channel;
    private final LoopPlace place;
    private ChannelPromise promise;
    private ScheduledFuture<?> timeout;

    PendingConnect(MooringChannel channel, LoopPlace place) {
        this.channel = channel;
        this.place = place;
    }

    boolean isPending() {
        return promise != null;
    }

    /** Starts making a session to {@code peer} for {@code connect}, within {@code timeoutMillis} (0: no bound). */
    void start(InetSocketAddress peer, ChannelPromise connect, int timeoutMillis) {
        promise = connect;
        connect.addListener(f -> {
            if (f.isCancelled() && promise == connect) fail(null); // the session, if made, is closed
        });
        if (timeoutMillis > 0) {
            timeout = channel.eventLoop().schedule(() -> {
                if (promise == connect) {
                    fail(new ConnectTimeoutException("connecting to " + peer + " timed out after " + timeoutMillis
                            + " ms"));
                }
            }, timeoutMillis, TimeUnit.MILLISECONDS);
        }
        place.whenDone(() -> place.transport().endpoint().connectAsync(peer), (s, e) -> made(connect, peer, s, e),
                RdmaSession::closeAsync);
    }

    /** The channel closes: the connect under way, if any, fails. */
    void closed() {
        if (promise != null) end().tryFailure(new IOException("the channel was closed while connecting"));
    }

    private void made(ChannelPromise connect, InetSocketAddress peer, RdmaSession s, Throwable error) {
        if (promise != connect) { // timed out, cancelled or closed meanwhile
            if (s != null) s.closeAsync();
        } else if (error != null) {
            fail(channel.annotateConnectFailure(error, peer));
        } else {
            end();
            channel.connectedTo(s, connect);
        }
    }

    /** The connect fails with {@code cause} (null: it was cancelled), and the channel closes. */
    private void fail(Throwable cause) {
        ChannelPromise failed = end();
        if (cause != null) failed.tryFailure(cause);
        channel.unsafe().close(channel.unsafe().voidPromise()); // no session was made: nothing more to do
    }

    /** The connect is over: its promise, to complete. */
    private ChannelPromise end() {
        ChannelPromise ended = promise;
        promise = null;
        if (timeout != null) timeout.cancel(false);
        timeout = null;
        return ended;
    }
}
