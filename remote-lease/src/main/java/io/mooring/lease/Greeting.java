package io.mooring.lease;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.ProtocolException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The two frames before a session's bootstrap, on its TCP connection: the connecting side's HELLO — its proof that it
 * speaks the protocol, which the accepting side waits for within the first-bytes timeout before it spends a
 * handshake slot, a session slot or a QP on it — and the accepting side's VERDICT: admitted, or refused with a reason
 * the connecting side turns into a {@link SessionRefusedException}. Big-endian:
 * <pre>
 * HELLO    magic:int 0x4D4C4849 ("MLHI")  version:int (the lease protocol's)
 * VERDICT  reason:byte (0 admitted, else {@link SessionRefusedException.Reason}'s code)  retryAfterMillis:long
 *          length:short  message:UTF-8 (at most {@value #MAX_MESSAGE} bytes)
 * </pre>
 */
final class Greeting {
    static final int MAGIC = 0x4D4C_4849;
    static final int HELLO_BYTES = 8;
    static final int MAX_MESSAGE = 512;
    private static final int ADMITTED = 0;

    private Greeting() {}

    /** The connecting side's first bytes. */
    static void sayHello(Socket socket) throws IOException {
        socket.getOutputStream().write(ByteBuffer.allocate(HELLO_BYTES).putInt(MAGIC).putInt(MessageCodec.VERSION)
                .array());
    }

    /**
     * Reads the peer's HELLO (the caller bounds the wait).
     *
     * @throws ProtocolException if it is not one, or of another version
     */
    static void readHello(Socket socket) throws IOException {
        byte[] hello = socket.getInputStream().readNBytes(HELLO_BYTES);
        if (hello.length < HELLO_BYTES) throw new EOFException("the peer hung up after " + hello.length + " bytes");
        var b = ByteBuffer.wrap(hello);
        int magic = b.getInt();
        int version = b.getInt();
        if (magic != MAGIC) throw new ProtocolException(String.format("not a Mooring session: magic 0x%08x", magic));
        if (version != MessageCodec.VERSION) {
            throw new ProtocolException("the peer speaks lease protocol " + version + ", this side "
                    + MessageCodec.VERSION);
        }
    }

    static void admit(Socket socket) throws IOException {
        writeVerdict(socket, ADMITTED, Duration.ZERO, "");
    }

    /** Tells the peer why it is refused; the caller closes the socket. Best effort: the peer may be gone. */
    static void refuse(Socket socket, SessionRefusedException.Reason reason, Duration retryAfter, String message) {
        try {
            writeVerdict(socket, reason.code, retryAfter, message);
        } catch (IOException e) {
            // gone already: there is nobody to tell
        }
    }

    private static void writeVerdict(Socket socket, int code, Duration retryAfter, String message) throws IOException {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(text.length, MAX_MESSAGE);
        socket.getOutputStream().write(ByteBuffer.allocate(1 + 8 + 2 + length).put((byte) code)
                .putLong(retryAfter.toMillis()).putShort((short) length).put(text, 0, length).array());
    }

    /**
     * Reads the accepting side's VERDICT: returns if admitted.
     *
     * @throws SessionRefusedException naming the peer's reason
     * @throws ProtocolException       if the verdict is not one this side can read
     */
    static void awaitVerdict(Socket socket) throws IOException {
        InputStream in = socket.getInputStream();
        var data = new DataInputStream(in);
        int code;
        long retryAfterMillis;
        byte[] text;
        try {
            code = data.readUnsignedByte();
            retryAfterMillis = data.readLong();
            int length = data.readUnsignedShort();
            if (length > MAX_MESSAGE) {
                throw new ProtocolException("the peer's verdict has a " + length + "-byte message");
            }
            text = data.readNBytes(length);
            if (text.length < length) throw new EOFException();
        } catch (EOFException e) {
            throw new EOFException(socket.getRemoteSocketAddress() + " hung up before it admitted or refused the"
                    + " session: is it a Mooring endpoint of this version?");
        }
        if (code == ADMITTED) return;
        var reason = SessionRefusedException.Reason.of(code);
        if (reason == null) throw new ProtocolException("the peer refused the session with unknown reason " + code);
        throw new SessionRefusedException(reason, Duration.ofMillis(Math.max(0, retryAfterMillis)),
                socket.getRemoteSocketAddress() + " refused the session (" + reason + "): "
                        + new String(text, StandardCharsets.UTF_8));
    }
}
