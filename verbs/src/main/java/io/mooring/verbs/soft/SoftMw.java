package io.mooring.verbs.soft;

import io.mooring.verbs.spi.MwOps;
import io.mooring.verbs.values.MwType;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * A memory window: a key over a sub-range of a region, with its own rights, bound and invalidated at will.
 *
 * <p>As on a NIC, ending a binding (invalidate, rebind, deallocate) fences the accesses it let in: each access
 * holds the read side of {@link #admission} from its key check to the end of its copy, and a change of binding
 * takes the write side, so it returns only after every admitted access has finished and admits none after it
 * (else a READ racing a lease's end could copy the memory's next contents). An access pays one uncontended
 * read-lock acquisition for that.
 */
final class SoftMw implements MwOps, KeyTable.Owner {
    final SoftDevice device;
    final SoftPd pd;
    final MwType type;
    private final int index;
    /** Read side: one access through the window. Write side: a change of its binding. Package-private for tests. */
    final ReentrantReadWriteLock admission = new ReentrantReadWriteLock();
    private volatile int key; // written under the write side; read alone by rkey()
    private SoftMr region;    // guarded by admission; null when not bound
    private long address;     // guarded by admission
    private long length;      // guarded by admission
    private int access;       // guarded by admission
    private SoftQp boundQp;   // guarded by admission; type 2 windows are reachable only through the QP that bound them

    SoftMw(SoftDevice device, SoftPd pd, MwType type, int key) {
        this.device = device;
        this.pd = pd;
        this.type = type;
        this.index = key >>> 8;
        this.key = key;
    }

    @Override
    public int rkey() {
        return key;
    }

    int index() {
        return index;
    }

    boolean isBound() {
        admission.readLock().lock();
        try {
            return region != null;
        } finally {
            admission.readLock().unlock();
        }
    }

    /**
     * Runs {@code copy} on {@code [addr, addr + len)} if {@code rkey} reaches it through this window with
     * {@code right} for {@code qp}; the binding cannot end until it returns.
     *
     * @return false if the key, range, rights or QP do not allow it, or the region is gone
     */
    boolean access(int rkey, long addr, long len, int right, SoftQp qp, Consumer<MemorySegment> copy) {
        admission.readLock().lock();
        try {
            boolean allowed = region != null && key == rkey && (access & right) != 0 && len >= 0 && addr >= address
                    && addr - address <= length - len && (type == MwType.TYPE_1 || boundQp == qp);
            return allowed && region.access(addr, len, copy);
        } finally {
            admission.readLock().unlock();
        }
    }

    void bind(int newKey, SoftMr mr, long addr, long len, int rights, SoftQp qp) {
        admission.writeLock().lock();
        try {
            if (region != null) region.windowUnbound();
            mr.windowBound();
            key = newKey;
            region = mr;
            address = addr;
            length = len;
            access = rights;
            boundQp = type == MwType.TYPE_2 ? qp : null;
        } finally {
            admission.writeLock().unlock();
        }
    }

    /** LOCAL_INV: the key stops working once the accesses it admitted have finished. */
    boolean invalidate(int expectedKey) {
        admission.writeLock().lock();
        try {
            if (region == null || key != expectedKey) return false;
            unbindLocked();
            return true;
        } finally {
            admission.writeLock().unlock();
        }
    }

    @Override
    public void deallocate() {
        admission.writeLock().lock();
        try {
            if (region != null) unbindLocked();
        } finally {
            admission.writeLock().unlock();
        }
        device.keys.remove(index, this);
        pd.children.decrementAndGet();
    }

    private void unbindLocked() {
        region.windowUnbound();
        region = null;
        boundQp = null;
    }
}
