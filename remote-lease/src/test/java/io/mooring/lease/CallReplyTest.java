package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Request/reply on a session through the public API: many callers on virtual threads, a server answering out of order,
 * calls given up by timeout or cancel, and peers that reply to calls never made. The server is on soft0; the caller on
 * soft0 too (the in-JVM link) or on soft1 (the TCP fabric).
 */
@Timeout(120)
class CallReplyTest {
    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());

    private static final int CALLERS = 64;

    private final ResourceGraph graph = ResourceGraph.builder().name("calls").build();
    private final List<AutoCloseable> closeLast = new ArrayList<>();
    private RdmaArena serverArena;
    private RdmaArena callerArena;
    private RdmaSession server;
    private RdmaSession caller;

    private void connect(String callerDevice) throws Exception {
        ProtectionDomain serverPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ProtectionDomain callerPd = RdmaDevices.open(callerDevice, graph).allocateProtectionDomain();
        serverArena = arena(serverPd);
        callerArena = arena(callerPd);
        var serverEndpoint = RdmaEndpoint.builder(serverPd, serverArena).build();
        var callerEndpoint = RdmaEndpoint.builder(callerPd, callerArena).build();
        closeLast.addAll(List.of(callerEndpoint, serverEndpoint, callerArena, serverArena));
        try (var listener = serverEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            var accepted = listener.acceptAsync();
            caller = callerEndpoint.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
            server = accepted.get(30, TimeUnit.SECONDS);
        }
    }

    private static RdmaArena arena(ProtectionDomain pd) {
        return RdmaArena.builder(pd).chunkSize(1 << 20).shards(1).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND))
                .build();
    }

    @AfterEach
    void teardown() throws Exception {
        if (caller != null) caller.close();
        if (server != null) server.close();
        for (AutoCloseable c : closeLast) c.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    /**
     * 64 callers, each with its own calls and one-way messages between them; the server answers its calls in batches
     * of up to 8, in reverse order. Every caller gets the reply to its own call; one-way messages reach the server's
     * {@code receive()} beside the calls, and no reply reaches the caller's.
     */
    @ParameterizedTest(name = "caller on {0}")
    @ValueSource(strings = {"soft:soft0", "soft:soft1"})
    void everyCallerGetsTheReplyToItsOwnCallWhileTheServerRepliesOutOfOrder(String callerDevice) throws Exception {
        connect(callerDevice);
        int callsEach = 100;
        var oneWay = new AtomicInteger();
        Thread serving = Thread.ofVirtual().start(() -> serveInReverseBatches(oneWay));
        var wrong = new AtomicInteger();
        var failure = new AtomicReference<Throwable>();
        try (var callers = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < CALLERS; c++) {
                long who = c;
                callers.submit(() -> {
                    try {
                        for (long i = 0; i < callsEach; i++) {
                            long tag = who << 32 | i;
                            if (i % 10 == 0) sendOneWay(tag);
                            try (Block request = callerArena.allocate(8, 8)) {
                                request.segment().set(ValueLayout.JAVA_LONG, 0, tag);
                                try (InboundMessage reply = caller.callAsync(request).get(30, TimeUnit.SECONDS)) {
                                    if (reply.length() != 8 || reply.data().get(ValueLayout.JAVA_LONG, 0) != answer(tag)) {
                                        wrong.incrementAndGet();
                                    }
                                }
                            }
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                });
            }
        }
        if (failure.get() != null) throw new AssertionError(failure.get());
        assertEquals(0, wrong.get(), "replies that went to the wrong caller");
        assertEquals(CALLERS * callsEach / 10, oneWay.get(), "one-way messages the server received beside the calls");
        CompletableFuture<InboundMessage> stray = caller.receiveAsync();
        assertFalse(stray.isDone(), "a reply showed up in the caller's receive()");
        stray.cancel(false);
        assertEquals(0, caller.lateReplies());
        server.close();
        serving.join();
    }

    private void sendOneWay(long tag) {
        try (Block message = callerArena.allocate(8, 8)) {
            message.segment().set(ValueLayout.JAVA_LONG, 0, tag);
            caller.send(message);
        }
    }

    private static long answer(long tag) {
        return ~tag * 31;
    }

    /** The server: collects calls and answers each batch backwards once 8 wait or none came for a moment. */
    private void serveInReverseBatches(AtomicInteger oneWay) {
        List<long[]> batch = new ArrayList<>(); // call id's message index, tag
        List<InboundMessage> calls = new ArrayList<>();
        while (true) {
            InboundMessage m;
            try {
                m = server.receive(Duration.ofMillis(5));
            } catch (MooringTimeoutException e) {
                m = null;
            } catch (SessionLostException e) {
                return;
            }
            if (m != null && !m.isCall()) {
                oneWay.incrementAndGet();
                m.close();
                continue;
            }
            if (m != null) calls.add(m);
            if (calls.size() == 8 || m == null && !calls.isEmpty()) {
                Collections.reverse(calls);
                for (InboundMessage call : calls) {
                    try (Block reply = serverArena.allocate(8, 8)) {
                        reply.segment().set(ValueLayout.JAVA_LONG, 0, answer(call.data().get(ValueLayout.JAVA_LONG, 0)));
                        call.reply(reply);
                    } catch (SessionLostException e) {
                        return;
                    } finally {
                        call.close();
                    }
                }
                calls.clear();
            }
        }
    }

    /**
     * Calls that time out, from 64 callers at once: each throws {@link MooringTimeoutException} with its request block the
     * caller's again; the replies the server sends afterwards go to nobody — freed and counted — and the caller's
     * arena is back where it started. A call made afterwards gets its own reply, not a late one.
     */
    @ParameterizedTest(name = "caller on {0}")
    @ValueSource(strings = {"soft:soft0", "soft:soft1"})
    void callsThatTimeOutFreeWhatTheyHeldAndTheirLateRepliesGoToNobody(String callerDevice) throws Exception {
        connect(callerDevice);
        long blocksAtStart = callerArena.stats().liveBlocks();
        var held = CompletableFuture.supplyAsync(() -> receiveCalls(CALLERS), Executors.newVirtualThreadPerTaskExecutor());
        var timedOut = new AtomicInteger();
        try (var callers = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < CALLERS; c++) {
                long tag = c;
                callers.submit(() -> {
                    try (Block request = callerArena.allocate(8, 8)) {
                        request.segment().set(ValueLayout.JAVA_LONG, 0, tag);
                        caller.call(request, Duration.ofMillis(300)).close();
                    } catch (MooringTimeoutException e) {
                        timedOut.incrementAndGet();
                    }
                    return null;
                });
            }
        }
        assertEquals(CALLERS, timedOut.get());
        for (InboundMessage call : held.get(30, TimeUnit.SECONDS)) { // the server answers, too late
            try (call; Block reply = serverArena.allocate(8, 8)) {
                call.reply(reply);
            }
        }
        awaitTrue(() -> caller.lateReplies() == CALLERS, "every late reply to be freed");
        assertEquals(blocksAtStart, callerArena.stats().liveBlocks(), "blocks the given-up calls left behind");

        try (Block request = callerArena.allocate(8, 8)) {
            request.segment().set(ValueLayout.JAVA_LONG, 0, 4242);
            var reply = caller.callAsync(request);
            replyToEverythingReceived(1);
            try (InboundMessage m = reply.get(30, TimeUnit.SECONDS)) {
                assertEquals(answer(4242), m.data().get(ValueLayout.JAVA_LONG, 0));
            }
        }
        assertEquals(CALLERS, caller.lateReplies());
    }

    /** The server takes {@code n} calls and holds them, unanswered. */
    private List<InboundMessage> receiveCalls(int n) {
        List<InboundMessage> calls = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            InboundMessage call = server.receive(Duration.ofSeconds(30));
            call.block().handOff(); // answered by the test's thread
            calls.add(call);
        }
        return calls;
    }

    private void replyToEverythingReceived(int calls) throws TimeoutException {
        for (int i = 0; i < calls; i++) {
            try (InboundMessage call = server.receive(Duration.ofSeconds(30));
                 Block reply = serverArena.allocate(8, 8)) {
                reply.segment().set(ValueLayout.JAVA_LONG, 0, answer(call.data().get(ValueLayout.JAVA_LONG, 0)));
                call.reply(reply);
            }
        }
    }

    /**
     * At most {@value PendingCalls#MAX_OUTSTANDING} calls wait for replies; past them a call is refused with
     * {@link FlowControlException}, nothing sent. Cancelling a call frees its slot at once, and its reply, when it comes,
     * is freed and counted; the others get theirs.
     */
    @Test
    void callsPastTheBoundAreRefusedAndACancelledCallFreesItsSlotAndItsReply() throws Exception {
        connect("soft:soft0");
        long blocksAtStart = callerArena.stats().liveBlocks();
        Block request = callerArena.allocateShared(8, 8);
        request.segment().set(ValueLayout.JAVA_LONG, 0, 7);
        List<CompletableFuture<InboundMessage>> replies = new ArrayList<>();
        for (int i = 0; i < PendingCalls.MAX_OUTSTANDING; i++) replies.add(caller.callAsync(request));
        var refused = assertThrows(FlowControlException.class, () -> caller.callAsync(request));
        assertTrue(refused.getMessage().contains(PendingCalls.MAX_OUTSTANDING + " calls already wait"),
                refused.getMessage());

        assertTrue(replies.get(3).cancel(false));
        replies.add(caller.callAsync(request)); // the cancelled call's slot
        replyToEverythingReceived(replies.size());
        for (int i = 0; i < replies.size(); i++) {
            if (i == 3) {
                assertThrows(CancellationException.class, replies.get(i)::join);
                continue;
            }
            try (InboundMessage reply = replies.get(i).get(30, TimeUnit.SECONDS)) {
                assertEquals(answer(7), reply.data().get(ValueLayout.JAVA_LONG, 0));
            }
        }
        awaitTrue(() -> caller.lateReplies() == 1, "the cancelled call's reply to be freed");
        request.close();
        assertEquals(blocksAtStart, callerArena.stats().liveBlocks());
    }

    /** A reply is sent once; a message sent one-way takes none. */
    @Test
    void aCallIsRepliedToOnceAndAOneWayMessageNever() throws Exception {
        connect("soft:soft0");
        try (Block request = callerArena.allocate(8, 8); Block reply = serverArena.allocate(8, 8)) {
            caller.send(request);
            try (InboundMessage oneWay = server.receive(Duration.ofSeconds(30))) {
                assertFalse(oneWay.isCall());
                var e = assertThrows(IllegalStateException.class, () -> oneWay.reply(reply));
                assertTrue(e.getMessage().contains("not a call"), e.getMessage());
            }
            var answer = caller.callAsync(request);
            try (InboundMessage call = server.receive(Duration.ofSeconds(30))) {
                assertTrue(call.isCall());
                call.reply(reply);
                var e = assertThrows(IllegalStateException.class, () -> call.reply(reply));
                assertTrue(e.getMessage().contains("already replied"), e.getMessage());
            }
            answer.get(30, TimeUnit.SECONDS).close();
        }
    }

    /**
     * The SEND's immediate is the frame's, so a message's own immediate travels after its bytes: the receiver gets both
     * intact, and a message with one is 4 bytes shorter at most.
     */
    @Test
    void aMessagesOwnImmediateTravelsAfterItsBytes() throws Exception {
        connect("soft:soft1");
        int most = caller.peerMaxMessageSize() - MessageFrame.TRAILER;
        try (Block message = callerArena.allocate(caller.peerMaxMessageSize(), 8)) {
            message.segment().fill((byte) 0x5a);
            caller.sendWithImmAsync(message, most, 0xC0FFEE).get(30, TimeUnit.SECONDS);
            try (InboundMessage m = server.receive(Duration.ofSeconds(30))) {
                assertEquals(most, m.length());
                assertEquals(0xC0FFEE, m.immediate());
                assertFalse(m.isCall());
                assertEquals(-1, m.data().mismatch(message.segment().asSlice(0, most)));
            }
            var e = assertThrows(IllegalArgumentException.class, () -> caller.sendWithImmAsync(message, most + 1, 1));
            assertTrue(e.getMessage().contains("4 of them the immediate value"), e.getMessage());
        }
    }

    /**
     * A peer that replies to a call this side never made, or frames a message in a way the protocol has no meaning for,
     * breaks the protocol: the session is lost, saying why, and nothing it sent is left behind.
     */
    @ParameterizedTest(name = "immediate 0x{0}")
    @ValueSource(ints = {0xC000_0005, 0x0000_0001, 0x8000_0000})
    void aPeerReplyingToACallNeverMadeOrFramingBadlyLosesTheSession(int frame) throws Exception {
        ProtectionDomain serverPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ProtectionDomain peerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        serverArena = arena(serverPd);
        var serverEndpoint = RdmaEndpoint.builder(serverPd, serverArena).build();
        closeLast.addAll(List.of(serverEndpoint, serverArena));
        try (var listener = serverEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            var accepted = listener.acceptAsync();
            try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
                server = accepted.get(30, TimeUnit.SECONDS);
                peer.sendData(new byte[16], frame);
                SessionEnd end = server.closed().get(30, TimeUnit.SECONDS);
        String why = end.reason();
                assertTrue(why.contains(" lost: ") && why.contains(frame == 0xC000_0005
                        ? "replied to call 5, which this side never made" : "malformed frame"), why);
                awaitTrue(() -> serverArena.stats().liveBlocks() == serverEndpoint.receives().posted(),
                        "the peer's message to be freed");
            }
        }
        try (Block request = serverArena.allocateShared(8, 8)) {
            assertThrows(SessionLostException.class, () -> server.callAsync(request));
        }
    }

    /**
     * A session this side closed reports itself as one that ended (api-style.md): the receive pending at the close and
     * every call after it fail with the same {@link SessionLostException}, so a loop ends one way whichever came first.
     */
    @Test
    void aSessionClosedHereFailsThePendingReceiveAndEveryLaterCallAlike() throws Exception {
        connect("soft:soft0");
        var pending = caller.receiveAsync();
        caller.close();
        var failed = assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
        assertEquals(SessionLostException.class, failed.getCause().getClass());
        var after = assertThrows(SessionLostException.class, caller::receive);
        assertEquals("session to " + caller.peerAddress() + " closed by this side", after.getMessage());
        try (Block request = callerArena.allocateShared(8, 8)) {
            assertThrows(SessionLostException.class, () -> caller.callAsync(request));
        }
    }

    private static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for " + what);
            Thread.sleep(5);
        }
    }
}
