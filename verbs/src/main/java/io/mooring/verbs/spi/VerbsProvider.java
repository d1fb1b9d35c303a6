package io.mooring.verbs.spi;

import io.mooring.verbs.values.DeviceInfo;
import java.util.List;

/** A way to reach RDMA devices: {@code ibv} (rdma-core through FFM) or {@code soft} (pure Java). */
public interface VerbsProvider {
    /** {@code ibv} or {@code soft}; what {@code mooring.provider} names. */
    String name();

    /**
     * The devices this provider can open now; empty if it has none.
     *
     * @throws io.mooring.verbs.VerbsException if the provider cannot look at all, with the reason and a hint
     *                                         (e.g. ENOSYS: no RDMA support in this kernel)
     */
    List<DeviceInfo> devices();

    /** Opens a device ({@code ibv_open_device}); its async events go to {@code events} until it is closed. */
    ContextOps open(String deviceName, AsyncEventSink events);
}
