package io.mooring.allocator;

import io.mooring.verbs.Access;
import io.mooring.verbs.MemoryRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A slice of registered memory handed out by an {@link RdmaArena}: what work requests name with
 * {@link #region()}, {@link #lkey()} and {@link #address()}. Closing frees it; a second close throws and
 * changes nothing.
 *
 * <p>Its {@link #segment()} has exactly the requested size and alignment. How long the segment stays usable
 * depends on how the block was allocated:
 * <ul>
 *   <li>{@link RdmaArena#allocate} (checked, the default): confined to the allocating thread, like
 *       {@link Arena#ofConfined()} (whose scope the first {@code segment()} call makes); after {@code close()}
 *       every access through it throws.</li>
 *   <li>{@link RdmaArena#allocateShared}: usable from any thread, and still unusable after close — at the price
 *       of a shared scope's close (a handshake with every thread, tens of microseconds).</li>
 *   <li>unchecked arenas ({@code RdmaArena.Builder#checked(false)}): a plain segment that stays addressable
 *       after close. Fastest; a use after close reads or corrupts memory handed to someone else.</li>
 * </ul>
 *
 * <p>Any thread may close a block. Closed by its owner — the thread that allocated it — it is <em>freed locally</em>:
 * no atomic instruction, and the memory goes straight to that thread's cache (the fast path). Closed by another
 * thread, a checked or unchecked block is <em>mt-freed</em> (mimalloc's word): pushed onto its owner's list, and
 * never reused until it is <em>collected</em> — counted in {@link ArenaStats#uncollectedFrees()} until then. The
 * bound: it is collected at the owner's next call into the arena, or else by the arena's collector, which runs
 * 20 ms after the close (and at every {@link RdmaArena#purge()}) and collects it if the owner has ended, or is
 * between calls into the arena and never made the block's {@link #segment()} (a confined scope only the owner can
 * close: the owner could still write through it). A shared block is freed at once by whichever thread closes it.
 */
public final class Block implements AutoCloseable {
    private static final VarHandle STATE;
    private static final int OPEN = 0;
    private static final int CLOSED = 1;   // and freed: locally by its owner, or by anyone for a shared block
    private static final int MT_FREED = 2; // closed by another thread, on the owner's mt-free list until collected

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Block.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    // As few fields as will do: a block that escapes costs its allocation. The arena is the owner's shard's,
    // and a large block's page run follows from its address and size.
    final Caller owner;              // the allocating thread's state in the arena; its shard is the block's
    final Slab slab;                 // small blocks
    final Chunk chunk;               // every block: the chunk it lies in
    private final long address;
    private final long size;
    private Arena scope;             // shared: made with the block; confined: by the owner at its first segment()
    private final boolean confined;  // checked and confined to the owner, which alone makes and closes the scope
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    Block nextMtFree;                // on the owner's mt-free list

    Block(Caller owner, Slab slab, Chunk chunk, long address, long size, Arena sharedScope, boolean confined) {
        this.owner = owner;
        this.slab = slab;
        this.chunk = chunk;
        this.address = address;
        this.size = size;
        this.scope = sharedScope;
        this.confined = confined;
    }

    /**
     * The memory: exactly the requested size. Each call makes a new segment object over it (cheap, and free
     * when it does not escape the caller: the JIT keeps it in registers); they are all equal and die together.
     *
     * @throws IllegalStateException if the block is closed
     * @throws WrongThreadException  if the block is checked and confined to the thread that allocated it
     */
    public MemorySegment segment() {
        checkOpen();
        if (confined) {
            if (Thread.currentThread() != owner.thread) throw confinedElsewhere();
            // Made on first use, not by allocate: that keeps allocate small enough to inline, and a block that is
            // only posted (address and keys) never needs a scope at all.
            if (scope == null) scope = Arena.ofConfined();
        }
        return NativeMemory.segment(address, size, scope);
    }

    private WrongThreadException confinedElsewhere() {
        return new WrongThreadException(this + " is confined to the thread that allocated it (" + owner.thread.getName()
                + "); use it there, or allocate it with RdmaArena.allocateShared");
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
     * Frees the block: locally if the caller is its owner, else as an mt free (see the class comment).
     *
     * <p>Why the owner of a confined or unchecked block needs no atomic instruction: every other thread closes
     * with a compare-and-set and only pushes the block onto the owner's mt-free list. If both close at once, the
     * owner's write lands after the other's CAS and the collection finds the block freed locally already and frees
     * it only once. Shared blocks are closed with a CAS by everyone (see {@link #closeShared()}).
     *
     * @throws IllegalStateException if it was already closed (nothing else happens)
     */
    @Override
    public void close() {
        if (!confined && scope != null) {
            closeShared();
        } else if (Thread.currentThread() != owner.thread) {
            if (!STATE.compareAndSet(this, OPEN, MT_FREED)) throw alreadyClosed();
            arena().collector.freeMt(this);
        } else {
            if ((int) STATE.getOpaque(this) != OPEN) throw alreadyClosed();
            STATE.setOpaque(this, CLOSED);
            if (scope != null) scope.close();
            arena().threads.freeLocal(this);
        }
    }

    /**
     * A shared block is made to be handed between threads and its close costs a handshake anyway: every thread
     * closes it with a CAS and frees it at once, so its memory never waits for an owner that may be idle.
     */
    private void closeShared() {
        if (!STATE.compareAndSet(this, OPEN, CLOSED)) throw alreadyClosed();
        scope.close();
        arena().threads.free(this);
    }

    RdmaArena arena() {
        return owner.arena;
    }

    /** A large block's page run in its chunk: the first page. */
    int firstPage() {
        return chunk.page(address);
    }

    /** A large block's page run in its chunk: the pages, those of its class. */
    int pages() {
        return (int) (SizeClasses.largeSize(size) >>> SizeClasses.LOG2_PAGE);
    }

    private IllegalStateException alreadyClosed() {
        return new IllegalStateException("block 0x" + Long.toHexString(address) + " of " + size
                + " bytes is already closed");
    }

    /** Whether a checked block's confined scope was made: after an mt free only its owner can collect it then. */
    boolean hasScope() {
        return scope != null;
    }

    /**
     * Collection of an mt free, in the owner or in the collector (once the owner has ended, when nobody can reach
     * its confined segment any more, or while the owner is between calls and the block has no scope): the owner
     * closes the confined scope. False if the owner closed the block too (a double close racing with the mt free):
     * it was freed locally then, and must not be freed again.
     */
    boolean finishMtFree(boolean byOwner) {
        if ((int) STATE.getOpaque(this) != MT_FREED) return false;
        if (byOwner && confined && scope != null) scope.close();
        return true;
    }

    @Override
    public String toString() {
        return "Block[0x" + Long.toHexString(address) + ", " + size + " bytes" + (isOpen() ? "" : ", closed") + "]";
    }
}
