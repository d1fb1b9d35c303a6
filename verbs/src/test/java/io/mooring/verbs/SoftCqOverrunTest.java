package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import java.lang.foreign.Arena;
import java.util.EnumSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A completion queue overrun on the soft NIC does what it does on rxe ({@code rxe_cq_post}, the responder's class G
 * error) and mlx5: {@code IBV_EVENT_CQ_ERR} once on the context's async events, naming the CQ; every QP whose
 * completion was lost moves to ERROR (an unacknowledged request's peer meets RETRY_EXC_ERR); posts to QPs on the
 * CQ fail with EIO; QPs on other CQs go on; everything can still be destroyed in order.
 */
class SoftCqOverrunTest {
    private static final int SIZE = 64;

    private final ResourceGraph graph = ResourceGraph.builder().name(getClass().getSimpleName()).build();
    private final Arena arena = Arena.ofShared();
    private final BlockingQueue<AsyncEvent> events = new LinkedBlockingQueue<>();
    private DeviceContext local;
    private ProtectionDomain pd;
    private ProtectionDomain peerPd;
    private CompletionQueue peerCq;
    private MemoryRegion source;
    private MemoryRegion target;

    /** A local QP on a CQ of the context under test, connected to a peer QP in another context. */
    private record Pair(QueuePair qp, QueuePair peer) {}

    @BeforeEach
    void open() {
        local = RdmaDevices.open("soft:soft0", graph);
        local.onAsyncEvent(events::add);
        DeviceContext remote = RdmaDevices.open("soft:soft0", graph);
        pd = local.allocateProtectionDomain();
        peerPd = remote.allocateProtectionDomain();
        peerCq = remote.createCompletionQueue(64);
        var rights = EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE);
        source = pd.register(arena.allocate(SIZE, 64), rights);
        target = peerPd.register(arena.allocate(SIZE, 64), rights);
    }

    @AfterEach
    void teardown() {
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        arena.close();
    }

    @Test
    void anOverrunRaisesCqErrOnceAndMovesTheQpsThatLostCompletionsToError() throws Exception {
        CompletionQueue tiny = local.createCompletionQueue(2);
        CompletionQueue other = local.createCompletionQueue(16);
        Pair a = pair(tiny);
        Pair c = pair(tiny);
        Pair d = pair(other);
        MemoryRegion inbox = pd.register(arena.allocate(SIZE, 64), EnumSet.of(Access.LOCAL_WRITE));
        c.qp().post(ReceiveRequest.into(inbox, 0, SIZE)); // its completion comes after the overrun

        for (int i = 0; i < 3; i++) a.qp().post(write()); // the third completion finds the CQ full

        AsyncEvent first = nextEvent();
        assertEquals(new AsyncEvent(AsyncEvent.Type.CQ_ERR, tiny.toString()), first);
        awaitState(a.qp(), QpState.ERROR);
        var refused = assertThrows(VerbsException.class, () -> a.qp().post(write()));
        assertEquals(Errno.EIO.number(), refused.errno(), refused::getMessage);
        assertTrue(refused.getMessage().contains("overran its capacity of 2"), refused::getMessage);
        assertThrows(VerbsException.class, () -> c.qp().post(write()), "a QP on the overrun CQ takes no posts");
        assertThrows(VerbsException.class, () -> tiny.poll(new WorkCompletion[] {new WorkCompletion()}));

        // The peer's SEND lands in c's receive, whose completion is lost: c moves to ERROR without acknowledging.
        MemoryRegion outbox = peerPd.register(arena.allocate(SIZE, 64), EnumSet.of(Access.LOCAL_WRITE));
        c.peer().post(WorkRequest.send(outbox, 0, SIZE));
        assertEquals(WcStatus.RETRY_EXC_ERR, Endpoint.next(peerCq).status());
        awaitState(c.qp(), QpState.ERROR);

        d.qp().post(write());
        assertEquals(WcStatus.SUCCESS, Endpoint.next(other).status(), "a QP on another CQ is untouched");
        assertEquals(QpState.RTS, d.qp().query().state());

        assertNoEventBefore(); // c's lost completion raised no second CQ_ERR
    }

    /**
     * A dispatcher whose poll fails (EIO after the overrun) lets go of the CQ: a request waiting on it fails instead of
     * waiting for ever, and a hand poll reports the provider's error, not that the dispatcher polls.
     */
    @Test
    void aDispatcherWhosePollFailsFailsTheWaitingRequestsAndLetsGoOfTheCq() throws Exception {
        CompletionQueue tiny = local.createCompletionQueue(2);
        Pair a = pair(tiny);
        var entered = new CountDownLatch(1);
        var stall = new CountDownLatch(1);
        CompletionDispatcher d = tiny.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {
            entered.countDown();
            try {
                stall.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        a.qp().post(write());
        assertTrue(entered.await(Endpoint.WAIT.toSeconds(), TimeUnit.SECONDS), "the handler got no completion");
        a.qp().post(write());
        a.qp().post(write()); // the CQ is full while the handler stalls
        var waiting = a.qp().postAsync(write()); // its completion overruns the CQ
        assertEquals(new AsyncEvent(AsyncEvent.Type.CQ_ERR, tiny.toString()), nextEvent());
        stall.countDown(); // the dispatcher polls again: EIO

        var failed = assertThrows(ExecutionException.class, () -> waiting.get(5, TimeUnit.SECONDS));
        assertInstanceOf(VerbsException.class, failed.getCause());
        assertTrue(failed.getCause().getMessage().contains("overran its capacity of 2"), failed::toString);
        var refused = assertThrows(VerbsException.class, () -> tiny.poll(new WorkCompletion[] {new WorkCompletion()}));
        assertEquals(Errno.EIO.number(), refused.errno(), refused::getMessage);
        d.close();
        d.close();
    }

    @Test
    void aFullCqThatIsPolledInTimeRaisesNothing() throws Exception {
        CompletionQueue cq = local.createCompletionQueue(1);
        Pair a = pair(cq);
        for (int i = 0; i < 8; i++) {
            a.qp().post(write());
            assertEquals(WcStatus.SUCCESS, Endpoint.next(cq).status());
        }
        assertEquals(QpState.RTS, a.qp().query().state());
        assertNoEventBefore();
    }

    /**
     * Overruns a fresh CQ and asserts its event is the next one: events arrive in the order they were raised, so an
     * event raised before (by what the test did so far) would come first.
     */
    private void assertNoEventBefore() throws InterruptedException {
        CompletionQueue marker = local.createCompletionQueue(1);
        Pair m = pair(marker);
        m.qp().post(write());
        m.qp().post(write());
        assertEquals(new AsyncEvent(AsyncEvent.Type.CQ_ERR, marker.toString()), nextEvent());
        assertTrue(events.isEmpty(), () -> "unexpected " + events);
    }

    private Pair pair(CompletionQueue cq) {
        QueuePair qp = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
        QueuePair peer = peerPd.createQueuePair(peerCq, peerCq, QpCapabilities.DEFAULT);
        ConnectOptions options = VerbsConformance.FAST;
        QpInfo mine = qp.info(options);
        QpInfo theirs = peer.info(options);
        qp.connect(theirs, options);
        peer.connect(mine, options);
        return new Pair(qp, peer);
    }

    private WorkRequest write() {
        return WorkRequest.write(source, 0, SIZE).remote(target.address(), target.rkey());
    }

    private AsyncEvent nextEvent() throws InterruptedException {
        AsyncEvent e = events.poll(Endpoint.WAIT.toSeconds(), TimeUnit.SECONDS);
        assertTrue(e != null, "no async event within " + Endpoint.WAIT);
        return e;
    }

    private static void awaitState(QueuePair qp, QpState state) throws InterruptedException {
        long deadline = System.nanoTime() + Endpoint.WAIT.toNanos();
        while (qp.query().state() != state) {
            assertTrue(System.nanoTime() < deadline, () -> qp + " is " + qp.query().state() + ", not " + state);
            Thread.sleep(1);
        }
    }
}
