package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * The far side of {@link SoftTwoProcessTest}, run in a child JVM: it opens its own {@code soft0}, registers
 * {@link #SIZES a few regions} filled with {@link #pattern known bytes}, listens on an ephemeral loopback port
 * (printed as its only line of output) and then does what the parent's {@link Command commands} say, over that
 * one control connection, which also carries the {@link Bootstrap} exchanges. Anything unexpected throws, so the
 * process exits non-zero with the reason on stderr.
 */
final class TwoProcessPeer {
    /** Region indices in the application record. */
    static final int OPEN = 0;
    static final int READ_ONLY = 1;
    static final int WINDOWED = 2;
    static final int INBOX = 3;
    static final long[] SIZES = {4096, 1024, 4096, 1024};
    /** Per region: address (8), rkey (4), length (8). */
    static final int RECORD_BYTES = SIZES.length * (8 + 4 + 8);
    /** Receives posted by {@link Command#RECEIVE} have wr ids from here up; the peer's own requests use 1 and 2. */
    static final long FIRST_RECEIVE_ID = 100;
    /** What the child grants and the RNR timer it tells its peer; its own requests are all local. */
    static final ConnectOptions OPTIONS = ConnectOptions.DEFAULT;

    /**
     * What the parent asks, written as the name followed by the arguments (int unless noted); each is answered
     * once it is done.
     */
    enum Command {
        /** Reset the QP, exchange QpInfo and the region record through the bootstrap, connect, barrier. */
        CONNECT,
        /** n, length: post n receives of length bytes each, back to back in the inbox; answers how many are
         * outstanding. */
        RECEIVE,
        /** offset, length: bind the type 2 window over that range of the windowed region with remote read and write;
         * answers the bind's status name and the window's rkey. */
        BIND,
        /** Invalidate the window's current rkey (LOCAL_INV); answers the status name. */
        INVALIDATE,
        /** region: answers its length and bytes. */
        DUMP,
        /** n: waits for at least n completions not yet reported, then answers all there are (count, then per
         * completion status and opcode names, wr id, byte length, whether there is immediate data, and it). */
        COMPLETIONS,
        /** Answers the QP's state name. */
        STATE,
        /** Close every verbs object; answers how many are still alive, then exits. */
        EXIT
    }

    /** Byte {@code offset} of region {@code region} as the child fills it. */
    static byte pattern(int region, long offset) {
        return (byte) (0x40 * region + 7 * offset + 1);
    }

    private static final int BIND_ID = 1;
    private static final int INVALIDATE_ID = 2;
    /** A parent gone quiet this long is gone: the child does not outlive a lost test run by much. */
    private static final int IDLE_MILLIS = 90_000;

    private final Endpoint me;
    private final MemoryRegion[] regions = new MemoryRegion[SIZES.length];
    private final MemoryWindow window;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final Bootstrap bootstrap;
    private final List<WorkCompletion> unreported = new ArrayList<>();

    private TwoProcessPeer(Endpoint me, Socket control) throws IOException {
        this.me = me;
        regions[OPEN] = me.open(SIZES[OPEN], 0);
        regions[READ_ONLY] = me.region(SIZES[READ_ONLY], 0, Access.LOCAL_WRITE, Access.REMOTE_READ);
        // No remote rights of its own: only a bound window reaches it.
        regions[WINDOWED] = me.region(SIZES[WINDOWED], 0, Access.LOCAL_WRITE, Access.MW_BIND);
        regions[INBOX] = me.region(SIZES[INBOX], 0, Access.LOCAL_WRITE);
        for (int r = 0; r < regions.length; r++) {
            for (long i = 0; i < SIZES[r]; i++) regions[r].segment().set(ValueLayout.JAVA_BYTE, i, pattern(r, i));
        }
        window = me.pd.allocateWindow(MwType.TYPE_2);
        // Unbuffered input: the bootstrap reads the same stream and must find its bytes still there.
        in = new DataInputStream(control.getInputStream());
        out = new DataOutputStream(new BufferedOutputStream(control.getOutputStream()));
        bootstrap = Bootstrap.of(control);
    }

    public static void main(String[] args) throws Exception {
        try (var listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            System.out.println(listener.getLocalPort());
            System.out.flush();
            listener.setSoTimeout(IDLE_MILLIS);
            ResourceGraph graph = ResourceGraph.builder().name("two-process-peer").build();
            try (Arena arena = Arena.ofShared(); Socket control = listener.accept()) {
                control.setSoTimeout(IDLE_MILLIS);
                control.setTcpNoDelay(true);
                var me = new Endpoint(RdmaDevices.open("soft:soft0", graph), arena, QpCapabilities.DEFAULT);
                new TwoProcessPeer(me, control).serve(graph);
            } finally {
                graph.close(); // before the arena frees the memory under the regions
            }
        }
    }

    private void serve(ResourceGraph graph) throws IOException {
        while (true) {
            Command command = Command.valueOf(in.readUTF());
            switch (command) {
                case CONNECT -> connect();
                case RECEIVE -> receive(in.readInt(), in.readInt());
                case BIND -> bind(in.readInt(), in.readInt());
                case INVALIDATE -> {
                    me.qp.post(WorkRequest.invalidate(window.rkey()).wrId(INVALIDATE_ID));
                    out.writeUTF(awaitOwn(INVALIDATE_ID).status().name());
                }
                case DUMP -> {
                    byte[] bytes = regions[in.readInt()].segment().toArray(ValueLayout.JAVA_BYTE);
                    out.writeInt(bytes.length);
                    out.write(bytes);
                }
                case COMPLETIONS -> completions(in.readInt());
                case STATE -> out.writeUTF(me.qp.state().name());
                case EXIT -> {
                    graph.close();
                    out.writeInt(graph.liveCount());
                    out.flush();
                    return;
                }
            }
            out.flush();
        }
    }

    private void connect() throws IOException {
        if (me.qp.state() != QpState.RESET) me.qp.reset();
        ByteBuffer record = ByteBuffer.allocate(RECORD_BYTES);
        for (MemoryRegion mr : regions) record.putLong(mr.address()).putInt(mr.rkey()).putLong(mr.length());
        Bootstrap.Peer peer = bootstrap.exchange(me.qp.info(OPTIONS), record.flip(), 0);
        me.qp.connect(peer.qp(), OPTIONS);
        bootstrap.barrier();
    }

    private void receive(int count, int length) throws IOException {
        for (int i = 0; i < count; i++) {
            me.qp.post(ReceiveRequest.into(regions[INBOX], (long) i * length, length).wrId(FIRST_RECEIVE_ID + i));
        }
        out.writeInt(me.qp.outstandingReceives());
    }

    private void bind(int offset, int length) throws IOException {
        me.qp.post(WorkRequest.bind(window, regions[WINDOWED], offset, length,
                EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ)).wrId(BIND_ID));
        out.writeUTF(awaitOwn(BIND_ID).status().name());
        out.writeInt(window.rkey());
    }

    /** The completion of this side's own request; whatever else arrives meanwhile is kept for the parent. */
    private WorkCompletion awaitOwn(long wrId) {
        while (true) {
            WorkCompletion wc = me.next();
            if (wc.wrId() == wrId) return wc;
            unreported.add(wc);
        }
    }

    private void completions(int atLeast) throws IOException {
        while (unreported.size() < atLeast) unreported.add(me.next());
        WorkCompletion[] batch = {new WorkCompletion()};
        while (me.cq.poll(batch) == 1) unreported.add(batch[0].copy());
        out.writeInt(unreported.size());
        for (WorkCompletion wc : unreported) {
            out.writeUTF(wc.status().name());
            out.writeUTF(wc.opcode().name());
            out.writeLong(wc.wrId());
            out.writeInt(wc.byteLength());
            out.writeBoolean(wc.hasImmediate());
            out.writeInt(wc.hasImmediate() ? wc.immediate() : 0);
        }
        unreported.clear();
    }
}
