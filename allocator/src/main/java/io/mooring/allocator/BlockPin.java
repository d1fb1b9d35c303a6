package io.mooring.allocator;

import static io.mooring.allocator.Block.CLOSED;
import static io.mooring.allocator.Block.CLOSED_PINNED;
import static io.mooring.allocator.Block.HANDED_OFF;
import static io.mooring.allocator.Block.MT_FREED;
import static io.mooring.allocator.Block.OPEN;
import static io.mooring.allocator.Block.PIN;
import static io.mooring.allocator.Block.SHARED;
import static io.mooring.allocator.Block.STATE;
import static io.mooring.allocator.Block.STATUS;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One pin on a {@link Block} (see {@link Block#pin}), and pinning: while any pin is held, the block's memory is neither
 * freed nor reused, even after the block is closed. The count of pins lives in the block's state word ({@link
 * Block#STATE}, in steps of {@link Block#PIN}), where a close sees it; a pin object carries only its {@code onClose}
 * action and its place in the block's {@link List}. The last release after the block's close frees the memory.
 */
final class BlockPin implements Block.Pin {
    private static final System.Logger LOG = System.getLogger(BlockPin.class.getName());
    private static final VarHandle RELEASED;

    static {
        try {
            RELEASED = MethodHandles.lookup().findVarHandle(BlockPin.class, "released", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Block block;
    private final List list;
    private final Runnable onClose;
    private BlockPin prev; // in the block's List, guarded by its monitor
    private BlockPin next;
    @SuppressWarnings("unused") // through RELEASED
    private volatile boolean released;

    private BlockPin(Block block, List list, Runnable onClose) {
        this.block = block;
        this.list = list;
        this.onClose = onClose;
    }

    /** {@link Block#pin}. */
    static BlockPin pin(Block block, Runnable onClose) {
        List list = block.pins();
        if (list == null) throw block.closed(); // on an mt-free list
        BlockPin pin = list.add(block, onClose);
        if (Thread.currentThread() != block.owner.thread && (state(block) & (SHARED | HANDED_OFF)) == 0) {
            // The owner closes an open unpinned block with two plain accesses, which may have overwritten the count
            // just added. Once the owner is seen outside the allocator (a handshake, which orders its accesses with
            // this thread's), its close either ended before — the state shows it, and the pin is void — or starts
            // after and sees the pin. (A hand-off since makes no difference: it keeps the count.)
            MtFreeCollector.awaitBetweenCalls(block.owner);
            if (state(block) < PIN) { // closed with no pins: the owner's close overwrote this one
                list.unlink(pin);
                throw block.closed();
            }
        }
        return pin;
    }

    private static int state(Block block) {
        return (int) STATE.getVolatile(block);
    }

    /** Releases the pin: the block's memory is freed by the last release after its close. Idempotent. */
    @Override
    public void close() {
        if (!RELEASED.compareAndSet(this, false, true)) return;
        list.unlink(this);
        unpin();
    }

    /** Counts a new pin in the block's state word. Under the pin list's monitor. */
    private static void countPin(Block block) {
        while (true) {
            int s = state(block);
            if ((s & STATUS) != OPEN) throw block.closed();
            if (s + PIN < 0) throw new IllegalStateException(block + " has " + (s / PIN) + " pins, the most it can hold");
            if (STATE.compareAndSet(block, s, s + PIN)) return;
        }
    }

    /** Uncounts this pin; the last one after the close frees the memory, as a close of an unpinned block would. */
    private void unpin() {
        while (true) {
            int s = state(block);
            int left = s - PIN;
            if (left >= PIN || (left & STATUS) != CLOSED_PINNED) {
                if (STATE.compareAndSet(block, s, left)) return;
                continue;
            }
            boolean atOnce = (left & (HANDED_OFF | SHARED)) != 0; // its scope closed by the close: anyone frees it
            boolean byOwner = Thread.currentThread() == block.owner.thread;
            if (STATE.compareAndSet(block, s, atOnce || byOwner ? left & ~STATUS | CLOSED : MT_FREED)) {
                block.arena().closedPinned.decrementAndGet();
                block.free(atOnce, byOwner);
                return;
            }
        }
    }

    @Override
    public String toString() {
        return "Pin[" + block + (released ? ", released]" : "]");
    }

    /** Runs the {@code onClose} actions of the pins taken from a closed block, on the closing thread. */
    static void runOnClose(BlockPin first) {
        for (BlockPin p = first; p != null; p = p.next) {
            if (p.onClose == null) continue;
            try {
                p.onClose.run();
            } catch (RuntimeException | Error e) { // the closer's close must not fail for what a pinner does
                LOG.log(System.Logger.Level.WARNING, "onClose of a pin on " + p.block + " threw; ignored", e);
            }
        }
    }

    /**
     * The pins held on one block, made by its first pin: what its close must tell. Adding a pin and closing the block
     * both change the state word under this monitor, so a close sees every pin it counted.
     */
    static final class List {
        private BlockPin head;
        private boolean closed;

        /** A new pin, counted in the block's state word. */
        synchronized BlockPin add(Block block, Runnable onClose) {
            countPin(block); // throws if closed
            var p = new BlockPin(block, this, onClose);
            p.next = head;
            if (head != null) head.prev = p;
            head = p;
            return p;
        }

        /** Forgets a pin released before the close (after it, the list was taken whole). */
        synchronized void unlink(BlockPin p) {
            if (closed || (p.prev == null && head != p)) return;
            if (p.prev != null) p.prev.next = p.next;
            else head = p.next;
            if (p.next != null) p.next.prev = p.prev;
            p.prev = p.next = null;
        }

        /** The block is closed: takes every pin for {@link #runOnClose}. Under this monitor, with the state change. */
        BlockPin takeAll() {
            assert Thread.holdsLock(this);
            closed = true;
            BlockPin all = head;
            head = null;
            return all;
        }
    }
}
