package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
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
import java.util.EnumSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Messages arrive in the order their sends were called, whatever the credits: a send never overtakes one queued before
 * it for credit (issue 26, finding 1: the dispatcher posted the sends a CREDIT released after letting go of the flow's
 * lock, so a send that found a credit meanwhile went first — even from the same thread). Both endpoints on one soft
 * device (the in-JVM link), a window of 4 so that credits run short all the time, a receiver slower than its senders.
 */
@Timeout(120)
class MessageOrderTest {
    /** The sessions' INFO lines (the peer closing) are expected; kept out of the build output. */
    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());

    private static final int WINDOW = 4;
    /** Blocks each sender cycles through, each reused once its send completed. */
    private static final int IN_FLIGHT = 32;
    /** How long a sender pauses before a call, at random: calls land anywhere in a CREDIT's handling. */
    private static final int PAUSE_NANOS = 30_000;
    /** What the receiver spends per message beyond taking it. */
    private static final long RECEIVE_NANOS = 2_000;

    private final ResourceGraph graph = ResourceGraph.builder().name("order").build();
    private RdmaArena senderArena;
    private RdmaArena receiverArena;
    private RdmaEndpoint senderEndpoint;
    private RdmaEndpoint receiverEndpoint;
    private RdmaSession sender;
    private RdmaSession receiver;

    @BeforeEach
    void connect() throws Exception {
        ProtectionDomain senderPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ProtectionDomain receiverPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        senderArena = arena(senderPd);
        receiverArena = arena(receiverPd);
        senderEndpoint = RdmaEndpoint.builder(senderPd, senderArena).messageWindow(WINDOW).build();
        receiverEndpoint = RdmaEndpoint.builder(receiverPd, receiverArena).messageWindow(WINDOW).build();
        try (var listener = receiverEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            var accepted = listener.acceptAsync();
            sender = senderEndpoint.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
            receiver = accepted.get(30, TimeUnit.SECONDS);
        }
    }

    private static RdmaArena arena(ProtectionDomain pd) {
        return RdmaArena.builder(pd).chunkSize(1 << 20).shards(1).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND))
                .build();
    }

    @AfterEach
    void teardown() {
        sender.close();
        receiver.close();
        senderEndpoint.close();
        receiverEndpoint.close();
        senderArena.close();
        receiverArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    /**
     * {@code threads} senders each take a shared lock, number a message and call {@code sendAsync} inside it, so the
     * numbering is the order of the calls. They stay a little more than a window ahead of the receiver, at a random
     * moment each, so that a CREDIT often finds one send waiting and the next call racing it for the credit left over
     * — with one thread that is the plain case: its first send queued for credit, a CREDIT of two arrives, its next
     * send must not go before it. The receiver gets every number, in order.
     */
    @ParameterizedTest(name = "{0} sending thread(s)")
    @ValueSource(ints = {1, 2, 3})
    void messagesArriveInTheOrderTheirSendsWereCalledWhateverTheCredits(int threads) throws Exception {
        int total = 18_000;
        var order = new ReentrantLock();
        long[] next = {0};
        var received = new AtomicLong();
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long seed = t;
            senders.add(Thread.ofPlatform().name("sender-" + t).start(() -> {
                var random = new SplittableRandom(seed);
                Block[] blocks = new Block[IN_FLIGHT];
                CompletableFuture<?>[] sent = new CompletableFuture<?>[IN_FLIGHT];
                for (int i = 0; i < IN_FLIGHT; i++) blocks[i] = senderArena.allocateShared(8, 8);
                try {
                    for (int i = 0; ; i++) {
                        int slot = i % IN_FLIGHT;
                        if (sent[slot] != null) sent[slot].join(); // its block is ours again
                        while (next[0] - received.get() > WINDOW) Thread.onSpinWait(); // a racy read: a throttle
                        spin(random.nextInt(PAUSE_NANOS));
                        order.lock();
                        try {
                            if (next[0] == total) break;
                            blocks[slot].segment().set(ValueLayout.JAVA_LONG, 0, next[0]++);
                            sent[slot] = sender.sendAsync(blocks[slot], 8);
                        } finally {
                            order.unlock();
                        }
                    }
                    for (var s : sent) {
                        if (s != null) s.join();
                    }
                } finally {
                    for (Block b : blocks) b.close();
                }
            }));
        }
        int late = 0;
        long expected = 0;
        String firstLate = null;
        for (int i = 0; i < total; i++) {
            long n;
            try (InboundMessage m = receiver.receive(Duration.ofSeconds(30))) {
                n = m.data().get(ValueLayout.JAVA_LONG, 0);
            }
            received.incrementAndGet();
            if (n != expected && late++ == 0) firstLate = "message " + n + " arrived where " + expected + " was due";
            expected = n + 1;
            spin(RECEIVE_NANOS); // a receiver a little slower than its senders: credits run short
        }
        for (Thread s : senders) s.join();
        assertEquals(0, late, late + " of " + total + " messages arrived out of call order; the first: " + firstLate);
    }

    private static void spin(long nanos) {
        for (long start = System.nanoTime(); System.nanoTime() - start < nanos; ) Thread.onSpinWait();
    }
}
