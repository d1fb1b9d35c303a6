package io.mooring.verbs.spi;

import io.mooring.verbs.DeviceInfo;
import io.mooring.verbs.PortAttributes;

/** An open device ({@code struct ibv_context}). */
public interface ContextOps {
    DeviceInfo device();

    /** {@code ibv_query_port} plus the port's GID table. */
    PortAttributes queryPort(int port);

    /** {@code ibv_alloc_pd}. */
    PdOps allocatePd();

    /** {@code ibv_create_cq} with a completion channel, so completions can be waited for. */
    CqOps createCq(int capacity);

    /** {@code ibv_close_device}; called after every child was destroyed. */
    void close();
}
