package io.mooring.verbs.soft;

/**
 * The requests and responses that travel between a requester QP and its responder QP, in memory or over TCP.
 * Opcodes are {@code IBV_WR_*} codes.
 */
final class Wire {
    private Wire() {}

    /**
     * One operation against the responder's memory or receive queue. {@code psn} numbers it in the requester's
     * order; a retransmission keeps its number, so the responder can tell a duplicate from a new request.
     */
    record Request(int opcode, int srcQpn, int psn, long remoteAddress, int rkey, int length, byte[] payload,
                   int immediate, long compareAdd, long swap) {}

    private static final int PSN_MASK = 0xff_ffff;

    static int nextPsn(int psn) {
        return (psn + 1) & PSN_MASK;
    }

    /** {@code a - b} in 24-bit sequence space: negative if {@code a} comes before {@code b}. */
    static int psnDistance(int a, int b) {
        return ((a - b) << 8) >> 8;
    }

    /** What the responder answers (or, for {@link Kind#DROPPED}, what stands for no answer at all). */
    record Response(Kind kind, int rnrTimer, byte[] data, long atomicOriginal) {
        static final Response ACK = new Response(Kind.ACK, 0, null, 0);
        static final Response DROPPED = new Response(Kind.DROPPED, 0, null, 0);
        static final Response ACCESS_ERROR = new Response(Kind.NAK_ACCESS, 0, null, 0);
        static final Response INVALID_REQUEST = new Response(Kind.NAK_INVALID_REQUEST, 0, null, 0);
        static final Response OPERATION_ERROR = new Response(Kind.NAK_OPERATION, 0, null, 0);

        static Response rnr(int timer) {
            return new Response(Kind.RNR, timer, null, 0);
        }

        static Response data(byte[] data) {
            return new Response(Kind.ACK, 0, data, 0);
        }

        static Response atomic(long original) {
            return new Response(Kind.ACK, 0, null, original);
        }
    }

    /** ACK, the NAKs of IBTA 9.7.5.2, and "no answer" (the responder dropped it: not ready, not ours, gone). */
    enum Kind { ACK, RNR, NAK_ACCESS, NAK_INVALID_REQUEST, NAK_OPERATION, DROPPED }
}
