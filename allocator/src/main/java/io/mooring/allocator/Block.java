package io.mooring.allocator;

import io.mooring.verbs.Access;
import io.mooring.verbs.MemoryRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A slice of registered memory handed out by an {@link RdmaArena}: what work requests name with
 * {@link #region()}, {@link #lkey()} and {@link #address()}. Closing gives it back; a second close throws and
 * changes nothing.
 *
 * <p>Its {@link #segment()} has exactly the requested size and alignment. How long the segment stays usable
 * depends on how the block was allocated:
 * <ul>
 *   <li>{@link RdmaArena#allocate} (checked, the default): confined to the allocating thread, like
 *       {@link Arena#ofConfined()}; after {@code close()} every access through it throws. It may be closed from
 *       another thread: the memory is then quarantined until the owner's next {@code allocate} or
 *       {@code flushThreadCaches} (or its death).</li>
 *   <li>{@link RdmaArena#allocateShared}: usable from any thread, and still unusable after close — at the price
 *       of a shared scope's close (a handshake with every thread, tens of microseconds).</li>
 *   <li>unchecked arenas ({@code RdmaArena.Builder#checked(false)}): a plain segment that stays addressable
 *       after close. Fastest; a use after close reads or corrupts memory handed to someone else.</li>
 * </ul>
 */
public final class Block implements AutoCloseable {
    private static final VarHandle STATE;
    private static final int OPEN = 0;
    private static final int CLOSED = 1;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Block.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final RdmaArena arena;
    final Shard shard;
    final Slab slab;     // small blocks
    final Chunk chunk;   // every block: the chunk it lies in
    final int page;      // large blocks: first page of the run
    final int pages;     // large blocks: pages of the run (0 otherwise)
    private final long address;
    private final long size;
    private final Arena scope;       // null for unchecked blocks
    private final MemorySegment segment;
    final Caller owner;              // the allocating thread's state in the arena
    private final boolean confined;  // only the owner can close the scope
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    Block nextInInbox;

    Block(RdmaArena arena, Shard shard, Slab slab, Chunk chunk, int page, int pages, long address, long size,
          Arena scope, Caller owner, boolean confined) {
        this.arena = arena;
        this.shard = shard;
        this.slab = slab;
        this.chunk = chunk;
        this.page = page;
        this.pages = pages;
        this.address = address;
        this.size = size;
        this.scope = scope;
        this.owner = owner;
        this.confined = confined;
        this.segment = RdmaArena.view(address, size, scope);
    }

    /** The memory: exactly the requested size. */
    public MemorySegment segment() {
        checkOpen();
        return segment;
    }

    public long address() {
        return address;
    }

    /** The requested size (the block may occupy a little more: its size class). */
    public long size() {
        return size;
    }

    /** The registered region the block lies in. */
    public MemoryRegion region() {
        checkOpen();
        return chunk.region;
    }

    /** Where the block starts inside {@link #region()}: what {@code WorkRequest.local(region, offset, length)} takes. */
    public long regionOffset() {
        return address - region().address();
    }

    /** The key local work requests name it by. */
    public int lkey() {
        return region().lkey();
    }

    /**
     * The key a peer could reach the whole region with.
     *
     * @throws IllegalStateException if the arena grants no remote access (a remote-lease exposes a single block
     *                               through a memory window instead of this key)
     */
    public int rkey() {
        MemoryRegion r = region();
        if (!r.access().contains(Access.REMOTE_READ) && !r.access().contains(Access.REMOTE_WRITE)
                && !r.access().contains(Access.REMOTE_ATOMIC)) {
            throw new IllegalStateException("the arena's regions grant no remote access (" + r.access() + ")");
        }
        return r.rkey();
    }

    public boolean isOpen() {
        return state == OPEN;
    }

    private void checkOpen() {
        if (state != OPEN) throw new IllegalStateException("block 0x" + Long.toHexString(address) + " is closed");
    }

    /**
     * Gives the block back.
     *
     * @throws IllegalStateException if it was already closed (nothing else happens)
     */
    @Override
    public void close() {
        if (!STATE.compareAndSet(this, OPEN, CLOSED)) {
            throw new IllegalStateException("block 0x" + Long.toHexString(address) + " of " + size
                    + " bytes is already closed");
        }
        if (confined && Thread.currentThread() != owner.thread()) {
            arena.closeElsewhere(this);
            return;
        }
        if (scope != null) scope.close();
        arena.free(this);
    }

    /** Called by the owner when draining its inbox. */
    void closeScopeAsOwner() {
        scope.close();
    }

    @Override
    public String toString() {
        return "Block[0x" + Long.toHexString(address) + ", " + size + " bytes" + (isOpen() ? "" : ", closed") + "]";
    }
}
