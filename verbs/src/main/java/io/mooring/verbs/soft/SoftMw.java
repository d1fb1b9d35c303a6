package io.mooring.verbs.soft;

import io.mooring.verbs.MwType;
import io.mooring.verbs.spi.MwOps;

/** A memory window: a key over a sub-range of a region, with its own rights, bound and invalidated at will. */
final class SoftMw implements MwOps {
    final SoftDevice device;
    final SoftPd pd;
    final MwType type;
    private final int index;
    private int key;           // guarded by this
    private SoftMr region;     // guarded by this; null when not bound
    private long address;      // guarded by this
    private long length;       // guarded by this
    private int access;        // guarded by this
    private SoftQp boundQp;    // guarded by this; type 2 windows are reachable only through the QP that bound them

    /** A consistent view of the binding, taken under the window's lock. */
    record Binding(int key, SoftMr region, long address, long length, int access, SoftQp qp) {}

    SoftMw(SoftDevice device, SoftPd pd, MwType type, int key) {
        this.device = device;
        this.pd = pd;
        this.type = type;
        this.index = key >>> 8;
        this.key = key;
    }

    @Override
    public synchronized int rkey() {
        return key;
    }

    int index() {
        return index;
    }

    synchronized Binding binding() {
        return region == null ? null : new Binding(key, region, address, length, access, boundQp);
    }

    synchronized boolean isBound() {
        return region != null;
    }

    synchronized void bind(int newKey, SoftMr mr, long addr, long len, int rights, SoftQp qp) {
        if (region != null) region.windowUnbound();
        mr.windowBound();
        key = newKey;
        region = mr;
        address = addr;
        length = len;
        access = rights;
        boundQp = type == MwType.TYPE_2 ? qp : null;
    }

    /** LOCAL_INV: the key stops working at once. */
    synchronized boolean invalidate(int expectedKey) {
        if (region == null || key != expectedKey) return false;
        region.windowUnbound();
        region = null;
        boundQp = null;
        return true;
    }

    @Override
    public void deallocate() {
        synchronized (this) {
            if (region != null) region.windowUnbound();
            region = null;
        }
        device.keys.remove(index, this);
        pd.children.decrementAndGet();
    }
}
