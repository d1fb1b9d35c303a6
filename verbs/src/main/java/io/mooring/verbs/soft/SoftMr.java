package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.MrOps;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * A registered region. The NIC's view of the memory is a global-scope segment over the registered range, so
 * provider threads can reach it whatever arena the caller used; accesses hold the read lock and deregistration
 * takes the write lock, so once {@link #deregister()} returns nothing touches the memory any more.
 */
final class SoftMr implements MrOps, KeyTable.Owner {
    final SoftDevice device;
    final SoftPd pd;
    final int key;
    final long address;
    final long length;
    final int access;
    private final MemorySegment registered; // the caller's segment: its scope says whether the memory still exists
    private final MemorySegment view;
    private final ReentrantReadWriteLock dma = new ReentrantReadWriteLock();
    private boolean valid = true; // guarded by dma
    private int boundWindows;     // guarded by this
    /** Tests only: runs in every access once it is admitted, before it touches the memory (to pause one there). */
    volatile Runnable admittedHook;

    @SuppressWarnings("restricted") // the NIC's view of registered memory, whatever the caller's arena
    SoftMr(SoftDevice device, SoftPd pd, int key, MemorySegment segment, int access) {
        this.device = device;
        this.pd = pd;
        this.key = key;
        this.address = segment.address();
        this.length = segment.byteSize();
        this.access = access;
        this.registered = segment;
        this.view = MemorySegment.ofAddress(address).reinterpret(length);
    }

    @Override
    public int lkey() {
        return key;
    }

    @Override
    public int rkey() {
        return key;
    }

    /** Whether {@code [addr, addr + len)} lies inside the region. */
    boolean covers(long addr, long len) {
        return len >= 0 && addr >= address && addr - address <= length - len;
    }

    /**
     * Runs {@code access} on the bytes {@code [addr, addr + len)} while the region cannot be deregistered.
     *
     * @return false if the region was deregistered (or its memory freed) meanwhile
     */
    boolean access(long addr, long len, Consumer<MemorySegment> access) {
        if (!admit()) return false;
        try {
            access.accept(view.asSlice(addr - address, len));
            return true;
        } finally {
            dma.readLock().unlock();
        }
    }

    /** {@link #access} copying {@code len} bytes at {@code addr} into {@code into} at {@code at}: no lambda, no slice. */
    boolean copyOut(long addr, byte[] into, int at, int len) {
        if (!admit()) return false;
        try {
            MemorySegment.copy(view, ValueLayout.JAVA_BYTE, addr - address, into, at, len);
            return true;
        } finally {
            dma.readLock().unlock();
        }
    }

    /** {@link #access} copying {@code len} bytes of {@code from} at {@code at} to {@code addr}. */
    boolean copyIn(long addr, byte[] from, int at, int len) {
        if (!admit()) return false;
        try {
            MemorySegment.copy(from, at, view, ValueLayout.JAVA_BYTE, addr - address, len);
            return true;
        } finally {
            dma.readLock().unlock();
        }
    }

    /** Takes the read side of the DMA lock if the region is still registered (then the caller releases it). */
    private boolean admit() {
        dma.readLock().lock();
        if (!valid || !registered.scope().isAlive()) {
            dma.readLock().unlock();
            return false;
        }
        Runnable hook = admittedHook;
        if (hook == null) return true;
        try {
            hook.run();
        } catch (RuntimeException | Error e) {
            dma.readLock().unlock();
            throw e;
        }
        return true;
    }

    synchronized void windowBound() {
        boundWindows++;
    }

    synchronized void windowUnbound() {
        boundWindows--;
    }

    @Override
    public void deregister() {
        synchronized (this) {
            if (boundWindows > 0) {
                throw new VerbsException("ibv_dereg_mr", Errno.EBUSY.number(), "mr 0x" + Integer.toHexString(key),
                        boundWindows + " memory window(s) are still bound to it; invalidate or deallocate them first");
            }
        }
        dma.writeLock().lock();
        try {
            valid = false;
        } finally {
            dma.writeLock().unlock();
        }
        device.keys.remove(key >>> 8, this);
        pd.children.decrementAndGet();
        SoftDevice.unpin(length);
    }
}
