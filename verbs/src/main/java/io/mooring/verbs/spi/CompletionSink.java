package io.mooring.verbs.spi;

/** Receives polled completions one by one, in verbs encoding, without allocating. */
@FunctionalInterface
public interface CompletionSink {
    /**
     * @param wrId        the id the request was posted with
     * @param status      {@code IBV_WC_*} status
     * @param opcode      {@code IBV_WC_*} opcode (meaningful on success only)
     * @param vendorError the device's error syndrome ({@code vendor_err}); 0 on success
     * @param byteLength  bytes transferred (receives, READ, atomics)
     * @param immediate   immediate data in host order, if {@code flags} has {@code IBV_WC_WITH_IMM}
     * @param flags       {@code IBV_WC_*} flags ({@code wc_flags}); 0 on failure
     * @param qpNumber    the local QP the request belonged to
     */
    void completion(long wrId, int status, int opcode, int vendorError, int byteLength, int immediate, int flags,
                    int qpNumber);
}
