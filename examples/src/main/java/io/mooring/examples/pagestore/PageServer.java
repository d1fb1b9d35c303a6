package io.mooring.examples.pagestore;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.SessionLostException;
import io.mooring.verbs.values.Access;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.CountDownLatch;

/**
 * The server of a remote page store: {@link Pages#COUNT} pages in one arena block, offered whole and read-only to every
 * session — clients READ pages where they lie, the server's CPU not involved — and written by calls, each served where
 * it arrives, on the endpoint's dispatcher: the body copied in place under the page's lock, the page stamped with its
 * next version and checksum, the version replied.
 */
public final class PageServer implements AutoCloseable {
    /** How long a client may READ the table before it must ask again; longer than any run here. */
    static final Duration LEASE = Duration.ofMinutes(5);
    private static final int LOCKS = 256;

    private final Block table;
    private final MemorySegment pages;
    private final Object[] locks = new Object[LOCKS];

    /** A table of version-0 pages in {@code endpoint}'s arena. */
    PageServer(RdmaEndpoint endpoint) {
        this.table = endpoint.arena().allocateShared(Pages.TABLE_BYTES, 4096);
        this.pages = table.segment();
        for (int p = 0; p < Pages.COUNT; p++) {
            Pages.fillBody(pages, (long) p * Pages.BYTES + Pages.HEADER, p);
            Pages.stamp(pages, (long) p * Pages.BYTES, 0);
        }
        for (int i = 0; i < LOCKS; i++) locks[i] = new Object();
    }

    /** Serves {@code sessions} sessions from {@code listener}, each until its client leaves. */
    void serve(RdmaListener listener, int sessions) throws Exception {
        var ended = new CountDownLatch(sessions);
        for (int i = 0; i < sessions; i++) {
            RdmaSession session = listener.acceptAsync().get();
            session.offer(table, LEASE, EnumSet.of(Access.REMOTE_READ));
            serveWrites(session, ended);
        }
        ended.await();
    }

    /**
     * Answers the session's writes where they arrive — on the endpoint's dispatcher, which they never block (a copy, a
     * checksum, a post) — until its client leaves: each waiting one now, then a callback for the next.
     */
    private void serveWrites(RdmaSession session, CountDownLatch ended) {
        while (true) {
            var next = session.receiveAsync();
            if (!next.isDone()) {
                next.whenComplete((request, left) -> {
                    if (left != null) {
                        session.closeAsync().whenComplete((v, e) -> ended.countDown());
                    } else {
                        serveWrite(request);
                        serveWrites(session, ended);
                    }
                });
                return;
            }
            if (next.isCompletedExceptionally()) {
                session.closeAsync().whenComplete((v, e) -> ended.countDown());
                return;
            }
            serveWrite(next.join());
        }
    }

    private void serveWrite(InboundMessage request) {
        try (request) {
            if (!request.isCall() || request.length() != Pages.WRITE_REQUEST) return; // clients are peers: check
            MemorySegment data = request.data();
            long page = data.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
            if (page < 0 || page >= Pages.COUNT) return;
            Block reply = request.session().endpoint().arena().allocate(Long.BYTES);
            reply.segment().set(ValueLayout.JAVA_LONG, 0, write((int) page, data));
            reply.handOff(); // closed where its send completes
            request.replyAsync(reply, Long.BYTES).whenComplete((sent, e) -> reply.close());
        } catch (SessionLostException left) { // the client left meanwhile: the next receive says so
        }
    }

    /** Writes a request's body into its page; returns the page's new version. */
    private long write(int page, MemorySegment request) {
        long at = (long) page * Pages.BYTES;
        synchronized (locks[page % LOCKS]) {
            long version = Pages.version(pages.asSlice(at, Pages.BYTES)) + 1;
            MemorySegment.copy(request, Long.BYTES, pages, at + Pages.HEADER, Pages.BODY);
            Pages.stamp(pages, at, version);
            return version;
        }
    }

    @Override
    public void close() {
        table.close();
    }

    /**
     * Serves {@code sessions} sessions on {@code port} of {@code device}, printing {@code listening on PORT} first and
     * the arena's live blocks at the end.
     */
    public static void run(String device, int port, int sessions) throws Exception {
        try (var memory = Pages.Memory.open(device)) {
            try (RdmaEndpoint endpoint = endpoint(memory);
                 RdmaListener listener = endpoint.listen(port);
                 PageServer server = new PageServer(endpoint)) {
                System.out.println("listening on " + listener.address().getPort());
                server.serve(listener, sessions);
            }
            var stats = memory.arena().stats();
            System.out.println("server: " + sessions + " session(s) served, "
                    + (stats.liveBlocks() - stats.uncollectedFrees()) + " live blocks");
        }
    }

    /** An endpoint whose messages hold a write's request. */
    static RdmaEndpoint endpoint(Pages.Memory memory) {
        return RdmaEndpoint.builder(memory.pd(), memory.arena()).maxMessageSize(Pages.BYTES).build();
    }
}
