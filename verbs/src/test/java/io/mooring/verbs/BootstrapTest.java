package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class BootstrapTest {
    private static final QpInfo SERVER = new QpInfo(0x12, 0xabcdef, Gid.of(InetAddress.getLoopbackAddress()), 40000,
            Mtu.MTU_4096, 0x8badf00d_deadbeefL);
    private static final QpInfo CLIENT = new QpInfo(0xff_ffff, 0, new Gid(0xfe80_0000_0000_0000L, 0x0202_c9ff_fe00_0001L),
            0, Mtu.MTU_1024, 0);

    /** A buffer's address, rkey and length: what a write peer needs. */
    private static ByteBuffer region(long address, int rkey, int length) {
        return ByteBuffer.allocate(16).putLong(address).putInt(rkey).putInt(length).flip();
    }

    @Test
    void socketChannelsExchangeQpInfoAndRecordThenMeetAtABarrier() throws Exception {
        try (var server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             ExecutorService peer = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Bootstrap.Peer> serverSide = peer.submit(() -> {
                try (SocketChannel ch = server.accept()) {
                    var boot = Bootstrap.of(ch);
                    Bootstrap.Peer p = boot.exchange(SERVER, region(0x7f00_0000_1000L, 0x1234, 64));
                    boot.barrier();
                    return p;
                }
            });
            Bootstrap.Peer seenByClient;
            try (SocketChannel ch = SocketChannel.open(server.getLocalAddress())) {
                var boot = Bootstrap.of(ch);
                ByteBuffer mine = region(0x5555_0000L, 0x99, 128);
                seenByClient = boot.exchange(CLIENT, mine);
                assertEquals(0, mine.position(), "the caller's buffer is left as it was");
                boot.barrier();
            }
            Bootstrap.Peer seenByServer = serverSide.get(20, TimeUnit.SECONDS);

            assertEquals(SERVER, seenByClient.qp());
            assertEquals(0x7f00_0000_1000L, seenByClient.data().getLong());
            assertEquals(0x1234, seenByClient.data().getInt());
            assertEquals(64, seenByClient.data().getInt());
            assertTrue(seenByClient.data().isReadOnly());
            assertEquals(CLIENT, seenByServer.qp());
            assertEquals(region(0x5555_0000L, 0x99, 128), seenByServer.data());
        }
    }

    @Test
    void socketsExchangeWithoutARecord() throws Exception {
        try (var server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             ExecutorService peer = Executors.newVirtualThreadPerTaskExecutor()) {
            Callable<QpInfo> accept = () -> {
                try (Socket s = server.accept()) {
                    return Bootstrap.of(s).exchange(SERVER, ByteBuffer.allocate(0)).qp();
                }
            };
            Future<QpInfo> serverSide = peer.submit(accept);
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort())) {
                s.setSoTimeout(20_000);
                Bootstrap.Peer p = Bootstrap.of(s).exchange(CLIENT, ByteBuffer.allocate(0));
                assertEquals(SERVER, p.qp());
                assertEquals(0, p.data().remaining());
            }
            assertEquals(CLIENT, serverSide.get(20, TimeUnit.SECONDS));
        }
    }

    @Test
    void everyTruncationIsAnEofNamingHowFarItGot() {
        byte[] full = message(Bootstrap.MAGIC, Bootstrap.VERSION, SERVER, region(1, 2, 3));
        for (int cut : new int[] {0, 3, Bootstrap.HEADER_BYTES, Bootstrap.HEADER_BYTES + 20, full.length - 1}) {
            EOFException e = failure(EOFException.class, () -> receiving(Arrays.copyOf(full, cut))
                    .exchange(CLIENT, region(4, 5, 6)), "cut at " + cut);
            assertTrue(e.getMessage().startsWith("the peer closed the bootstrap connection after "), e.getMessage());
        }
        assertEquals(SERVER, assertDoesNotThrow(() -> receiving(full).exchange(CLIENT, region(4, 5, 6))).qp());
    }

    @Test
    void aWrongMagicOrVersionIsRefused() {
        var magic = failure(ProtocolException.class, () -> receiving(
                message(0x47455420, Bootstrap.VERSION, SERVER, ByteBuffer.allocate(0))).exchange(CLIENT, ByteBuffer.allocate(0)));
        assertEquals("the peer is not a Mooring bootstrap: magic 0x47455420, expected 0x4d4f4f52 (\"MOOR\")",
                magic.getMessage());
        var version = failure(ProtocolException.class, () -> receiving(
                message(Bootstrap.MAGIC, 1, SERVER, ByteBuffer.allocate(0))).exchange(CLIENT, ByteBuffer.allocate(0)));
        assertEquals("the peer speaks bootstrap version 1, this side 2", version.getMessage());
    }

    @Test
    void aRecordOfAnotherLengthIsRefused() {
        var e = failure(ProtocolException.class, () -> receiving(
                message(Bootstrap.MAGIC, Bootstrap.VERSION, SERVER, ByteBuffer.allocate(8))).exchange(CLIENT, region(1, 2, 3)));
        assertTrue(e.getMessage().startsWith("the peer sent a 8-byte application record, this side expects 16 bytes"),
                e.getMessage());
    }

    @Test
    void malformedQueuePairDescriptionsAreRefused() {
        byte[] badMtu = message(Bootstrap.MAGIC, Bootstrap.VERSION, SERVER, ByteBuffer.allocate(0));
        ByteBuffer.wrap(badMtu).putInt(Bootstrap.HEADER_BYTES + QpInfo.BYTES - Long.BYTES - Integer.BYTES, 9);
        var mtu = failure(ProtocolException.class, () -> receiving(badMtu).exchange(CLIENT, ByteBuffer.allocate(0)));
        assertTrue(mtu.getMessage().contains("no MTU has verbs code 9"), mtu.getMessage());

        byte[] wideQpn = message(Bootstrap.MAGIC, Bootstrap.VERSION, SERVER, ByteBuffer.allocate(0));
        ByteBuffer.wrap(wideQpn).putInt(Bootstrap.HEADER_BYTES, 0x0100_0000);
        var qpn = failure(ProtocolException.class, () -> receiving(wideQpn).exchange(CLIENT, ByteBuffer.allocate(0)));
        assertTrue(qpn.getMessage().contains("qpn 0x1000000 (24 bits)"), qpn.getMessage());
    }

    @Test
    void barriersCheckWhatArrives() {
        var wrong = failure(ProtocolException.class, () -> receiving(new byte[] {'G', 'E', 'T', ' '}).barrier());
        assertEquals("the peer sent 0x47455420 where a barrier was expected", wrong.getMessage());
        failure(EOFException.class, () -> receiving(new byte[0]).barrier());
    }

    @Test
    void misuseIsAnIllegalArgument() throws IOException {
        var tooBig = ByteBuffer.allocate(Bootstrap.MAX_DATA_BYTES + 1);
        assertThrows(IllegalArgumentException.class, () -> receiving(new byte[0]).exchange(CLIENT, tooBig));
        assertThrows(IllegalArgumentException.class, () -> receiving(new byte[0]).exchange(CLIENT, ByteBuffer.allocate(0), -1));
        try (SocketChannel unconnected = SocketChannel.open()) {
            assertThrows(IllegalArgumentException.class, () -> Bootstrap.of(unconnected));
        }
        assertThrows(IllegalArgumentException.class, () -> Bootstrap.of(new Socket()));
    }

    /**
     * What {@code exchange} failed with: a {@link BootstrapFailedException} (a MooringException) whose cause is the
     * {@code kind} of IOException, with the cause's message.
     */
    private static <T extends IOException> T failure(Class<T> kind, Executable exchange, String... why) {
        var e = assertThrows(BootstrapFailedException.class, exchange, why.length == 0 ? null : why[0]);
        T cause = assertInstanceOf(kind, e.getCause());
        assertEquals(cause.getMessage(), e.getMessage());
        return cause;
    }

    /** A peer that sends nothing: the socket's read timeout ends the exchange with the one timeout type. */
    @Test
    void aSilentPeerTimesOutWithMooringTimeoutException() throws Exception {
        try (var server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Socket s = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
             Socket silent = server.accept()) {
            assertTrue(silent.isConnected(), "a peer that never writes");
            s.setSoTimeout(100);
            var e = assertThrows(MooringTimeoutException.class, () -> Bootstrap.of(s).exchange(CLIENT,
                    ByteBuffer.allocate(0)));
            assertEquals("the bootstrap exchange got nothing from the peer within the socket's read timeout (100 ms)",
                    e.getMessage());
            assertInstanceOf(SocketTimeoutException.class, e.getCause());
        }
    }

    /** A message as the format in Bootstrap's javadoc lays it out, written independently of Bootstrap. */
    private static byte[] message(int magic, int version, QpInfo qp, ByteBuffer data) {
        ByteBuffer b = ByteBuffer.allocate(8 + QpInfo.BYTES + data.remaining());
        b.putInt(magic).putShort((short) version).putShort((short) data.remaining());
        return qp.writeTo(b).put(data.duplicate()).array();
    }

    /** A bootstrap whose peer sent {@code bytes} and then closed; what this side sends is discarded. */
    private static Bootstrap receiving(byte[] bytes) {
        return new Bootstrap(Channels.newChannel(new ByteArrayInputStream(bytes)),
                Channels.newChannel(new ByteArrayOutputStream()), null);
    }
}
