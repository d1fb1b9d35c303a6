package io.mooring.verbs.spi;

/** Receives polled completions one by one, in verbs encoding, without allocating. */
@FunctionalInterface
public interface CompletionSink {
    /**
     * @param wrId       the id the request was posted with
     * @param status     {@code IBV_WC_*} status
     * @param opcode     {@code IBV_WC_*} opcode (meaningful on success only)
     * @param byteLength bytes transferred (receives, READ, atomics)
     * @param immediate  immediate data in host order, if {@code hasImmediate}
     * @param qpNumber   the local QP the request belonged to
     */
    void completion(long wrId, int status, int opcode, int byteLength, int immediate, boolean hasImmediate,
                    int qpNumber);
}
