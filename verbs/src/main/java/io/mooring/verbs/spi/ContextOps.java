package io.mooring.verbs.spi;

import io.mooring.verbs.testing.FaultOps;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.DeviceInfo;
import io.mooring.verbs.values.PortAttributes;

/** An open device ({@code struct ibv_context}). */
public interface ContextOps {
    /** Why a provider other than soft cannot inject faults; the object's name follows. */
    String NO_FAULTS = "fault injection is a feature of the soft provider (a real NIC's faults cannot be scheduled;"
            + " open soft:soft0 to test under faults), not of ";

    DeviceInfo device();

    /** {@code ibv_query_port} plus the port's GID table. */
    PortAttributes queryPort(int port);

    /** {@code ibv_alloc_pd}. */
    PdOps allocatePd();

    /** {@code ibv_create_cq} with a completion channel, so completions can be waited for. */
    CqOps createCq(int capacity);

    /**
     * Injects faults per {@code plan} into the traffic of every QP of this device, present and future; only the
     * soft provider can.
     *
     * @throws UnsupportedOperationException if the provider cannot
     * @throws IllegalStateException if one of its QPs has faults injected already
     */
    default FaultOps injectFaults(FaultPlan plan) {
        throw new UnsupportedOperationException(NO_FAULTS + device().name());
    }

    /** {@code ibv_close_device}; called after every child was destroyed. */
    void close();
}
