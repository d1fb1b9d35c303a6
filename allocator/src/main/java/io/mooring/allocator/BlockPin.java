package io.mooring.allocator;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One pin on a {@link Block} (see {@link Block#pin}): while any is held, the block's memory is neither freed nor
 * reused, even after the block is closed. The count of pins lives in the block's state word, where a close sees it;
 * a pin object carries only its {@code onClose} action and its place in the block's {@link List}.
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

    /** Releases the pin: the block's memory is freed by the last release after its close. Idempotent. */
    @Override
    public void close() {
        if (!RELEASED.compareAndSet(this, false, true)) return;
        list.unlink(this);
        block.unpin();
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
            block.countPin(); // throws if closed
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
