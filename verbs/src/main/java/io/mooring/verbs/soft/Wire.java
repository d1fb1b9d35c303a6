package io.mooring.verbs.soft;

import io.mooring.verbs.values.Opcode;

/**
 * The requests and responses that travel between a requester QP and its responder QP, in memory or over TCP.
 * Opcodes are {@code IBV_WR_*} codes.
 */
final class Wire {
    private Wire() {}

    /**
     * One operation against the responder's memory or receive queue. {@code psn} numbers it in the requester's
     * order; a retransmission keeps its number, so the responder can tell a duplicate from a new request. A SEND or
     * WRITE carries the first {@code length} bytes of {@code payload}; a READ's answer is written there (the
     * requester's buffer, as a NIC's READ response lands in the requester's memory). Mutable: a requester reuses one
     * for every request it sends, a TCP reader one for every request it serves (the responder keeps none), so
     * neither allocates per request; {@link #copy} one to hold it.
     */
    static final class Request {
        private int opcode;
        private int srcQpn;
        private int psn;
        private long remoteAddress;
        private int rkey;
        private int length;
        private byte[] payload;
        private int immediate;
        private long compareAdd;
        private long swap;

        Request() {}

        Request set(int opcode, int srcQpn, int psn, long remoteAddress, int rkey, int length, byte[] payload,
                    int immediate, long compareAdd, long swap) {
            this.opcode = opcode;
            this.srcQpn = srcQpn;
            this.psn = psn;
            this.remoteAddress = remoteAddress;
            this.rkey = rkey;
            this.length = length;
            this.payload = payload;
            this.immediate = immediate;
            this.compareAdd = compareAdd;
            this.swap = swap;
            return this;
        }

        /**
         * A copy to keep past this request. A SEND's or WRITE's payload is shared (the requester moves on only once it
         * is acknowledged); a READ's copy gets a buffer of its own, or its late answer would overwrite a later one.
         */
        Request copy() {
            byte[] p = isRead() ? new byte[length] : payload;
            return new Request().set(opcode, srcQpn, psn, remoteAddress, rkey, length, p, immediate, compareAdd, swap);
        }

        boolean isRead() {
            return opcode == Opcode.RDMA_READ.code();
        }

        int opcode() {
            return opcode;
        }

        int srcQpn() {
            return srcQpn;
        }

        int psn() {
            return psn;
        }

        long remoteAddress() {
            return remoteAddress;
        }

        int rkey() {
            return rkey;
        }

        int length() {
            return length;
        }

        byte[] payload() {
            return payload;
        }

        int immediate() {
            return immediate;
        }

        long compareAdd() {
            return compareAdd;
        }

        long swap() {
            return swap;
        }
    }

    private static final int PSN_MASK = 0xff_ffff;

    static int nextPsn(int psn) {
        return (psn + 1) & PSN_MASK;
    }

    /** {@code a - b} in 24-bit sequence space: negative if {@code a} comes before {@code b}. */
    static int psnDistance(int a, int b) {
        return ((a - b) << 8) >> 8;
    }

    /**
     * What the responder answers (or, for {@link Kind#DROPPED}, what stands for no answer at all). {@code data} carries
     * a READ's bytes over TCP only, until the requester's link copies them into the request's buffer.
     */
    record Response(Kind kind, int rnrTimer, byte[] data, long atomicOriginal) {
        static final Response ACK = new Response(Kind.ACK, 0, null, 0);
        static final Response DROPPED = new Response(Kind.DROPPED, 0, null, 0);
        static final Response ACCESS_ERROR = new Response(Kind.NAK_ACCESS, 0, null, 0);
        static final Response INVALID_REQUEST = new Response(Kind.NAK_INVALID_REQUEST, 0, null, 0);
        static final Response OPERATION_ERROR = new Response(Kind.NAK_OPERATION, 0, null, 0);

        static Response rnr(int timer) {
            return new Response(Kind.RNR, timer, null, 0);
        }

        static Response atomic(long original) {
            return new Response(Kind.ACK, 0, null, original);
        }
    }

    /**
     * ACK, the NAKs of IBTA 9.7.5.2, and "no answer" (the responder dropped it: not ready, not ours, gone); each with
     * the code a TCP link carries, fixed whatever order the constants are in.
     */
    enum Kind {
        ACK(0), RNR(1), NAK_ACCESS(2), NAK_INVALID_REQUEST(3), NAK_OPERATION(4), DROPPED(5);

        private static final Kind[] BY_CODE = new Kind[6];

        static {
            for (Kind k : values()) BY_CODE[k.code] = k;
        }

        final int code;

        Kind(int code) {
            this.code = code;
        }

        /** The kind of {@code code}, or null for a code no kind has. */
        static Kind of(int code) {
            return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
        }
    }
}
