package io.mooring.lease;

/**
 * What kind of application message a SEND on a session's data QP is, told by its immediate data — so that the
 * application's bytes travel untouched, in one scatter entry, and arrive as the very block the NIC wrote.
 * <pre>
 *   SEND, no immediate           a one-way message ({@code send})
 *   SEND with immediate  00 ...  malformed: the peer breaks the protocol
 *                        01 0    a one-way message with the application's immediate ({@code sendWithImm}); that value
 *                                travels in a 4-byte trailer after the bytes (big-endian), since the immediate is ours
 *                        10 id   a call ({@code callAsync}): the 30-bit id its reply names
 *                        11 id   a reply to call {@code id}
 * </pre>
 * Ids are issued in order from 1 and wrap after 2<sup>30</sup> − 1, far beyond the calls a session has outstanding.
 */
final class MessageFrame {
    static final int MESSAGE_WITH_IMMEDIATE = 1;
    static final int CALL = 2;
    static final int REPLY = 3;
    /** Bytes after a {@link #MESSAGE_WITH_IMMEDIATE}'s data: the application's immediate value. */
    static final int TRAILER = Integer.BYTES;
    /** The largest call id; 0 is never one. */
    static final int MAX_ID = (1 << 30) - 1;

    private MessageFrame() {}

    static int word(int kind, int id) {
        return kind << 30 | id;
    }

    static int kind(int word) {
        return word >>> 30;
    }

    static int id(int word) {
        return word & MAX_ID;
    }
}
