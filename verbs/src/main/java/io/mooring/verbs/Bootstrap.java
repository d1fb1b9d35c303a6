package io.mooring.verbs;

import io.mooring.lifecycle.MooringException;
import io.mooring.lifecycle.MooringTimeoutException;
import java.io.EOFException;
import java.io.IOException;
import java.net.ProtocolException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.WritableByteChannel;

/**
 * Out-of-band connection setup over an already-connected TCP socket: each side sends its {@link QpInfo} plus a
 * small application record whose size both sides agree on (e.g. a buffer's address, rkey and length), and
 * reads the peer's. It does not own the socket: the caller connects and closes it.
 *
 * <p>One message per side, big-endian:
 * <pre>
 * offset  bytes  field
 * 0       4      magic 0x4D4F4F52 ("MOOR")
 * 4       2      version (2)
 * 6       2      application record length n (0..{@value #MAX_DATA_BYTES})
 * 8       40     {@link QpInfo#writeTo QpInfo}
 * 48      n      application record
 * </pre>
 * Both sides write before they read; messages are far smaller than a socket buffer, so neither side blocks
 * the other. Everything read is checked: a peer that closes early fails with a {@link BootstrapFailedException}
 * caused by an {@link EOFException}, one that sends another magic, version or record length, or an impossible
 * QpInfo, with one caused by a {@link ProtocolException}; a read past the socket's timeout is a
 * {@link MooringTimeoutException}. An instance is not thread-safe.
 */
public final class Bootstrap {
    public static final int MAGIC = 0x4D4F_4F52;
    public static final int VERSION = 2;
    /** The largest application record: tiny on purpose (see the write-before-read rule above). */
    public static final int MAX_DATA_BYTES = 1024;
    static final int HEADER_BYTES = 4 + 2 + 2;
    private static final int BARRIER = 0x5359_4E43; // "SYNC"

    /**
     * What the peer sent.
     *
     * @param qp   its queue pair
     * @param data its application record: read-only, big-endian, positioned at 0
     */
    public record Peer(QpInfo qp, ByteBuffer data) {}

    private final ReadableByteChannel in;
    private final WritableByteChannel out;
    /** The socket whose read timeout bounds every read, or null (a channel, whose reads have none). */
    private final Socket socket;

    Bootstrap(ReadableByteChannel in, WritableByteChannel out, Socket socket) {
        this.in = in;
        this.out = out;
        this.socket = socket;
    }

    /**
     * A bootstrap over a connected channel in blocking mode.
     *
     * @throws IllegalArgumentException if it is not connected or not blocking (a read could then return nothing)
     */
    public static Bootstrap of(SocketChannel channel) {
        if (!channel.isConnected()) throw new IllegalArgumentException(channel + " is not connected");
        if (!channel.isBlocking()) throw new IllegalArgumentException(channel + " is in non-blocking mode");
        return new Bootstrap(channel, channel, null);
    }

    /**
     * A bootstrap over a connected socket; its {@link Socket#setSoTimeout read timeout} bounds every read.
     *
     * @throws IllegalArgumentException  if it is not connected
     * @throws BootstrapFailedException if its streams cannot be had (it was shut down)
     */
    public static Bootstrap of(Socket socket) {
        if (!socket.isConnected() || socket.isClosed()) throw new IllegalArgumentException(socket + " is not connected");
        try {
            return new Bootstrap(Channels.newChannel(socket.getInputStream()),
                    Channels.newChannel(socket.getOutputStream()), socket);
        } catch (IOException e) {
            throw new BootstrapFailedException("cannot bootstrap over " + socket + ": " + e.getMessage(), e);
        }
    }

    /** Sends {@code local} and {@code data}'s remaining bytes; reads the peer's, whose record must be as long. */
    public Peer exchange(QpInfo local, ByteBuffer data) {
        return exchange(local, data, data.remaining());
    }

    /**
     * Sends {@code local} and {@code data}'s remaining bytes (its position is not moved); reads the peer's
     * message, whose record must be {@code peerDataBytes} long.
     *
     * @throws IllegalArgumentException  if a record is longer than {@value #MAX_DATA_BYTES} bytes
     * @throws BootstrapFailedException if the peer closes the connection before its message is complete (caused by
     *                                  an {@link EOFException}), its message is not one this side can read (a
     *                                  {@link ProtocolException}), or the connection fails
     * @throws MooringTimeoutException  if the socket's read timeout passed before the peer's message came
     */
    public Peer exchange(QpInfo local, ByteBuffer data, int peerDataBytes) {
        checkSize(data.remaining(), "this side's");
        checkSize(peerDataBytes, "the expected peer");
        ByteBuffer message = ByteBuffer.allocate(HEADER_BYTES + QpInfo.BYTES + data.remaining());
        message.putInt(MAGIC).putShort((short) VERSION).putShort((short) data.remaining());
        local.writeTo(message).put(data.duplicate()).flip();
        try {
            while (message.hasRemaining()) out.write(message);
            return read(peerDataBytes);
        } catch (IOException e) {
            throw failed("the bootstrap exchange", e);
        }
    }

    private Peer read(int dataBytes) throws IOException {
        ByteBuffer header = readFully(HEADER_BYTES, "bootstrap header");
        int magic = header.getInt();
        if (magic != MAGIC) {
            throw new ProtocolException(String.format("the peer is not a Mooring bootstrap: magic 0x%08x, expected"
                    + " 0x%08x (\"MOOR\")", magic, MAGIC));
        }
        int version = Short.toUnsignedInt(header.getShort());
        if (version != VERSION) {
            throw new ProtocolException("the peer speaks bootstrap version " + version + ", this side " + VERSION);
        }
        int length = Short.toUnsignedInt(header.getShort());
        if (length != dataBytes) {
            throw new ProtocolException("the peer sent a " + length + "-byte application record, this side expects "
                    + dataBytes + " bytes: do both sides run the same program and version?");
        }
        ByteBuffer body = readFully(QpInfo.BYTES + length, "queue pair and application record");
        QpInfo qp = validQpInfo(body);
        return new Peer(qp, body.slice().asReadOnlyBuffer());
    }

    private static QpInfo validQpInfo(ByteBuffer body) throws ProtocolException {
        QpInfo qp;
        try {
            qp = QpInfo.readFrom(body);
        } catch (IllegalArgumentException e) {
            throw new ProtocolException("the peer sent a malformed queue pair description: " + e.getMessage());
        }
        if ((qp.qpn() & ~0xff_ffff) != 0 || (qp.lid() & ~0xffff) != 0) {
            throw new ProtocolException("the peer sent a malformed queue pair description: qpn 0x"
                    + Integer.toHexString(qp.qpn()) + " (24 bits), lid " + qp.lid() + " (16 bits)");
        }
        return qp;
    }

    /**
     * Waits until the peer calls {@code barrier()} too: e.g. both QPs are ready to receive before the first
     * send, or both sides are done before either tears its QP down.
     *
     * @throws BootstrapFailedException as {@link #exchange(QpInfo, ByteBuffer, int)} does
     * @throws MooringTimeoutException  if the socket's read timeout passed before the peer's barrier came
     */
    public void barrier() {
        ByteBuffer mark = ByteBuffer.allocate(Integer.BYTES).putInt(BARRIER).flip();
        try {
            while (mark.hasRemaining()) out.write(mark);
            int got = readFully(Integer.BYTES, "barrier").getInt();
            if (got != BARRIER) {
                throw new ProtocolException(String.format("the peer sent 0x%08x where a barrier was expected", got));
            }
        } catch (IOException e) {
            throw failed("the bootstrap barrier", e);
        }
    }

    /** {@code e} as the unchecked exception of its kind: a read timeout, else a failed bootstrap (its message kept). */
    private MooringException failed(String what, IOException e) {
        if (e instanceof SocketTimeoutException) {
            String limit = socket == null ? "" : " (" + readTimeoutMillis() + " ms)";
            return new MooringTimeoutException(what + " got nothing from the peer within the socket's read timeout"
                    + limit, e);
        }
        boolean ours = e instanceof EOFException || e instanceof ProtocolException; // messages written for the user
        return new BootstrapFailedException(ours ? e.getMessage() : what + " failed: " + e, e);
    }

    private int readTimeoutMillis() {
        try {
            return socket.getSoTimeout();
        } catch (IOException e) {
            return -1; // closed meanwhile
        }
    }

    private ByteBuffer readFully(int bytes, String what) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(bytes);
        while (buffer.hasRemaining()) {
            if (in.read(buffer) < 0) {
                throw new EOFException("the peer closed the bootstrap connection after " + buffer.position() + " of "
                        + bytes + " bytes of its " + what);
            }
        }
        return buffer.flip();
    }

    private static void checkSize(int bytes, String whose) {
        if (bytes < 0 || bytes > MAX_DATA_BYTES) {
            throw new IllegalArgumentException(whose + " application record of " + bytes + " bytes is outside [0, "
                    + MAX_DATA_BYTES + "]");
        }
    }
}
