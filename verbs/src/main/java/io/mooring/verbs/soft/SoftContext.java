package io.mooring.verbs.soft;

import io.mooring.verbs.DeviceInfo;
import io.mooring.verbs.Errno;
import io.mooring.verbs.PortAttributes;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.spi.CqOps;
import io.mooring.verbs.spi.PdOps;
import java.util.concurrent.atomic.AtomicInteger;

/** An open soft device. */
final class SoftContext implements ContextOps {
    final SoftDevice device;
    private final DeviceInfo info;
    /** Live PDs and CQs; closing with any left fails with EBUSY. */
    final AtomicInteger children = new AtomicInteger();

    SoftContext(SoftDevice device) {
        this.device = device;
        this.info = device.info();
    }

    @Override
    public DeviceInfo device() {
        return info;
    }

    @Override
    public PortAttributes queryPort(int port) {
        if (port != 1) {
            throw new VerbsException("ibv_query_port", Errno.EINVAL.number(), device.name, "it has port 1 only");
        }
        return device.port();
    }

    @Override
    public PdOps allocatePd() {
        children.incrementAndGet();
        return new SoftPd(this, device.newObjectId());
    }

    @Override
    public CqOps createCq(int capacity) {
        children.incrementAndGet();
        return new SoftCq(this, device.newObjectId(), capacity);
    }

    @Override
    public void close() {
        if (children.get() > 0) {
            throw new VerbsException("ibv_close_device", Errno.EBUSY.number(), device.name,
                    children.get() + " protection domains or completion queues are still open");
        }
    }
}
