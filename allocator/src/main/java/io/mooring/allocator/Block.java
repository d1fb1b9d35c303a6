package io.mooring.allocator;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.values.Access;
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
 *   <li>{@link RdmaArena#allocate} (checked, the default): confined to the thread that holds it — the allocating
 *       thread, until it {@linkplain #handOff() hands it off} — like {@link Arena#ofConfined()} (whose scope the
 *       holder's first {@code segment()} call makes); after {@code close()} every access through it throws.</li>
 *   <li>{@link RdmaArena#allocateShared}: usable from any thread, and still unusable after close — at the price
 *       of a shared scope's close (a handshake with every thread, tens of microseconds).</li>
 *   <li>unchecked arenas ({@code RdmaArena.Builder#checked(false)}): a plain segment that stays addressable
 *       after close. Fastest; a use after close reads or corrupts memory handed to someone else.</li>
 * </ul>
 *
 * <p>Any thread may close a block. Closed by its owner — the thread that allocated it — it is <em>freed locally</em>:
 * no atomic instruction, and the memory goes straight to that thread's cache (the fast path). Closed by another
 * thread without a hand-off, a checked or unchecked block is <em>mt-freed</em> (mimalloc's word): pushed onto its
 * owner's list, and
 * never reused until it is <em>collected</em> — counted in {@link ArenaStats#uncollectedFrees()} until then. The
 * bound: it is collected at the owner's next call into the arena, or else by the arena's collector, which runs
 * 20 ms after the close (and at every {@link RdmaArena#purge()}) and collects it if the owner has ended, or is
 * between calls into the arena and never made the block's {@link #segment()} (a confined scope only the owner can
 * close: the owner could still write through it). A shared block is freed at once by whichever thread closes it.
 *
 * <p>A checked block crosses threads without a shared scope by a <em>hand-off</em> (Rust's {@code Send}): the
 * holder's {@link #handOff()} closes its confined scope, so every segment it made throws from then on, and the next
 * thread to call {@code segment()} becomes the holder with a confined scope of its own. A handed-off block is closed
 * with a CAS by its holder, or by any thread while nobody holds it, which closes the holder's scope and frees the
 * memory at once into the closer's thread cache, as jemalloc frees a foreign pointer: it goes back to its shard with
 * that cache's next flush, in a batch. Nothing waits for the owner, however idle.
 *
 * <p>A {@linkplain #pin pinned} block is closed for its user at once but freed only by its last pin's release
 * (counted in {@link ArenaStats#closedPinnedBlocks()} meanwhile): a lease pins the block it exposes.
 */
public final class Block implements AutoCloseable {
    /**
     * Keeps a block's memory from being freed or reused while held, even after the block is closed: what a lease
     * takes, since a peer may still write into the memory until the lease is revoked. Get one from
     * {@link Block#pin}; {@link #close()} releases it and is idempotent.
     */
    public sealed interface Pin extends AutoCloseable permits BlockPin {
        /** Releases the pin; the last release after the block's close frees its memory. Idempotent. */
        @Override
        void close();
    }

    /** The state word, also {@link BlockPin}'s: it counts the pins where a close sees them. */
    static final VarHandle STATE;
    private static final VarHandle SCOPE;
    private static final VarHandle LINK;
    // The state word: a status in the low two bits, the hand-off and shared bits, the number of pins above (in steps
    // of PIN). OPEN is 0 exactly — open, not shared, never handed off, unpinned — the one state the owner's fast close
    // tests for.
    static final int OPEN = 0;
    static final int CLOSED = 1;        // and freed: locally by its owner, or by anyone for a shared block
    static final int MT_FREED = 2;      // closed by another thread, on the owner's mt-free list until collected
    static final int CLOSED_PINNED = 3; // closed while pinned: freed by the last unpin
    static final int STATUS = 3;
    static final int HANDED_OFF = 4;    // handed off once: every close is a CAS, and frees on the closer
    static final int SHARED = 8;        // allocateShared: a shared scope made with the block
    static final int PIN = 16;
    /** What the last block of an mt-free list links to (see {@link #setNextMtFree}). */
    private static final Object LAST_MT_FREE = new Object();
    /** The scope of a closed handed-off block: no thread can take hold of it any more. */
    private static final Arena CLOSED_SCOPE = Arena.ofConfined();

    static {
        try {
            var lookup = MethodHandles.lookup();
            STATE = lookup.findVarHandle(Block.class, "state", int.class);
            SCOPE = lookup.findVarHandle(Block.class, "scope", Arena.class);
            LINK = lookup.findVarHandle(Block.class, "link", Object.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        CLOSED_SCOPE.close();
    }

    // As few fields as will do — a block that escapes costs its allocation: 48 bytes with compressed pointers. The
    // arena is the owner's; a large block's page run follows from its address and size; whether it is confined, from
    // the arena and the shared bit.
    final Caller owner;              // the allocating thread's state in the arena
    private final Object home;       // a small block's Slab, or the Chunk a large or huge block lies in
    private final long address;
    private final long size;
    // Shared: made with the block. Confined: the holder's — the owner's, made at its first segment() and null again
    // once it closed it (the collector checks), or after a hand-off the thread's that took hold of it (CAS from null;
    // its owner is the holder), CLOSED_SCOPE once closed.
    private Arena scope;
    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    // While open, the pins' list (made by the first pin); once mt-freed, the next block on the owner's mt-free list.
    // One field for both: a closed block takes no pin, and an open one is on no list.
    @SuppressWarnings("unused") // through LINK
    private volatile Object link;

    Block(Caller owner, Object home, long address, long size, Arena sharedScope) {
        this.owner = owner;
        this.home = home;
        this.address = address;
        this.size = size;
        if (sharedScope != null) { // a plain store: the fast path's blocks keep the default state, OPEN
            this.scope = sharedScope;
            STATE.set(this, SHARED);
        }
    }

    /** A small block's slab, else null. */
    Slab slab() {
        return home instanceof Slab s ? s : null;
    }

    /** The chunk the block lies in. */
    Chunk chunk() {
        return home instanceof Slab s ? s.chunk : (Chunk) home;
    }

    /** The shard its memory belongs to — its chunk's, not always its owner's (see {@code ThreadBinding.free}). */
    Shard shard() {
        return chunk().shard;
    }

    /** Checked and not shared: the holder alone makes and closes the scope. */
    private boolean isConfined(int s) {
        return (s & SHARED) == 0 && owner.arena.checked;
    }

    /**
     * The memory: exactly the requested size. Each call makes a new segment object over it (cheap, and free
     * when it does not escape the caller: the JIT keeps it in registers); they are all equal and die together.
     * After a {@linkplain #handOff() hand-off}, the first thread to call this takes hold of the block.
     *
     * @throws ResourceClosedException if the block is closed
     * @throws WrongThreadException  if the block is checked and another thread holds it
     */
    public MemorySegment segment() {
        int s = state;
        if ((s & STATUS) != OPEN) throw closed();
        if (isConfined(s)) {
            if ((s & HANDED_OFF) != 0) return heldSegment();
            if (Thread.currentThread() != owner.thread) throw heldElsewhere();
            // Made on first use, not by allocate: that keeps allocate small enough to inline, and a block that is
            // only posted (address and keys) never needs a scope at all.
            if (scope == null) scope = Arena.ofConfined();
        }
        return NativeMemory.segment(address, size, scope);
    }

    /** A handed-off block's segment: the caller takes hold of it if nobody holds it. */
    private MemorySegment heldSegment() {
        Arena held = (Arena) SCOPE.getAcquire(this);
        if (held == null) {
            Arena mine = Arena.ofConfined();
            held = (Arena) SCOPE.compareAndExchange(this, null, mine);
            if (held == null) return NativeMemory.segment(address, size, mine);
            mine.close();
        }
        if (held == CLOSED_SCOPE) throw closed();
        if (!isHeldByCaller(held)) throw heldElsewhere();
        return NativeMemory.segment(address, size, held);
    }

    /** Whether the caller made {@code held}, the scope of a handed-off block (the JDK says no more than that). */
    private static boolean isHeldByCaller(Arena held) {
        try {
            return NativeMemory.segment(0, 0, held).isAccessibleBy(Thread.currentThread());
        } catch (WrongThreadException | IllegalStateException notMine) { // another's, or its holder just closed it
            return false;
        }
    }

    /**
     * Hands the block on to another thread (Rust's {@code Send}): ends this thread's hold — every segment it made
     * throws from now on — and lets the next thread that calls {@link #segment()} take hold of it, with a confined
     * scope of its own. Pass the block through anything that orders memory (a queue, a future). A few nanoseconds: a
     * confined scope's close, a CAS. From the first hand-off on, a close anywhere is a CAS that frees the memory at
     * once, into the closer's cache (see the class comment) — for an unchecked block (which any thread may use) that
     * is all a hand-off does; for a shared block nothing.
     *
     * @throws ResourceClosedException if the block is closed
     * @throws WrongThreadException  if another thread holds it (until its first hand-off, the allocating thread)
     */
    public void handOff() {
        int s = state;
        if ((s & STATUS) != OPEN) throw closed();
        if ((s & SHARED) != 0) return;
        if ((s & HANDED_OFF) == 0) {
            // Only the owner, even of an unchecked block: its close is plain, and must not race the bit's CAS.
            if (Thread.currentThread() != owner.thread) throw heldElsewhere();
            if (scope != null) scope.close();
            SCOPE.setRelease(this, (Arena) null);
            while (!STATE.compareAndSet(this, s, s | HANDED_OFF)) { // a pin or another thread's close came
                s = state;
                if ((s & STATUS) != OPEN) throw closed();
            }
        } else {
            Arena held = (Arena) SCOPE.getAcquire(this);
            if (held == null) return; // nobody holds it
            if (held == CLOSED_SCOPE) throw closed();
            if (!isHeldByCaller(held)) throw heldElsewhere();
            held.close();
            SCOPE.setRelease(this, (Arena) null);
        }
    }

    private WrongThreadException heldElsewhere() {
        return new WrongThreadException(this + " is held by another thread (" + (isHandedOff()
                ? "the one that took hold after a hand-off" : "the one that allocated it, " + owner.thread.getName())
                + "), and a checked block is confined to its holder: use it there, have that thread handOff() it "
                + "first, or allocate it with RdmaArena.allocateShared");
    }

    private boolean isHandedOff() {
        return (state & HANDED_OFF) != 0;
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
        return chunk().region;
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
        return (state & STATUS) == OPEN;
    }

    private void checkOpen() {
        if ((state & STATUS) != OPEN) throw closed();
    }

    ResourceClosedException closed() {
        return new ResourceClosedException("block 0x" + Long.toHexString(address) + " is closed");
    }

    /**
     * Frees the block: locally if the caller is its owner, else as an mt free, or on the closer once handed off (see
     * the class comment). A pinned block is closed at once — {@link #isOpen()} is false, a checked segment's access
     * throws, each pin's {@code onClose} runs here — but its memory is freed by the last pin's release.
     *
     * <p>Why the owner of an unpinned confined or unchecked block that was never handed off needs no atomic
     * instruction: every other thread changes the state with a compare-and-set. A close by another thread only pushes
     * the block onto the owner's mt-free list; if both close at once, the owner's write lands after the other's CAS
     * and the collection finds the block freed locally already and frees it only once. A pin by another thread waits
     * until the owner is seen outside the allocator, so no owner's close overwrites it unseen (see {@link #pin}).
     *
     * @throws ResourceClosedException if it was already closed (nothing else happens)
     * @throws WrongThreadException  if it was handed off and another thread holds it (nothing happens)
     */
    @Override
    public void close() {
        if (Thread.currentThread() == owner.thread && (int) STATE.getOpaque(this) == OPEN) {
            STATE.setOpaque(this, CLOSED);
            // The closed scope stays in place: no store of null (and its GC barrier) on the path that must inline.
            // Nothing reads it again — a closed block takes no pin, and the collector skips blocks freed locally.
            if (scope != null) scope.close();
            arena().threads.freeLocal(this);
        } else {
            closeSlow();
        }
    }

    /** Every close but the owner's of its open unpinned block: with a CAS, as state may change under it. */
    private void closeSlow() {
        boolean shared = (state & SHARED) != 0;
        boolean byOwner = Thread.currentThread() == owner.thread;
        Arena held = null; // a handed-off block's scope, held by this thread
        while (true) {
            int s = state;
            if ((s & STATUS) != OPEN) throw alreadyClosed();
            if ((s & HANDED_OFF) != 0 && held == null) {
                held = takeHoldToClose();
                continue; // the state again: a pin may have come meanwhile
            }
            if (s >= PIN) {
                if (closePinned(shared, byOwner, held)) return;
            } else if (STATE.compareAndSet(this, s, s | (shared || byOwner || held != null ? CLOSED : MT_FREED))) {
                if (held != null) {
                    // Every close of a handed-off block is that CAS, and its holder's scope closes here: no other
                    // close can race and no segment reaches the memory, so the closer frees it at once, into its cache.
                    closeHeldScope(held);
                } else if (shared) {
                    // A shared block is made to be handed between threads and its close costs a handshake anyway:
                    // anyone frees it at once, so its memory never waits for an owner that may be idle.
                    scope.close();
                }
                free(held != null || shared, byOwner);
                return;
            } // else a pin came or went
        }
    }

    /**
     * Gives the memory of the block, closed now, back: at once into the caller's cache if {@code atOnce} (shared or
     * handed off: its scope is closed already), else locally if the caller is its owner, or as an mt free.
     */
    void free(boolean atOnce, boolean byOwner) {
        if (atOnce) {
            arena().threads.free(this);
        } else if (byOwner) {
            if (scope != null) closeConfinedScope();
            arena().threads.freeLocal(this);
        } else {
            arena().collector.freeMt(this);
        }
    }

    /**
     * The hold a close of a handed-off block needs: the caller's own scope, or, if nobody holds the block, the closed
     * scope put in place so that nobody takes hold of it any more.
     */
    private Arena takeHoldToClose() {
        while (true) {
            Arena held = (Arena) SCOPE.getAcquire(this);
            if (held == null) {
                if (SCOPE.compareAndSet(this, null, CLOSED_SCOPE)) return CLOSED_SCOPE;
            } else if (held == CLOSED_SCOPE) {
                throw alreadyClosed(); // another close is under way
            } else if (!isHeldByCaller(held)) {
                throw heldElsewhere();
            } else {
                return held;
            }
        }
    }

    /** Closes the scope a close of a handed-off block held, leaving the closed scope in place. */
    private void closeHeldScope(Arena held) {
        if (held != CLOSED_SCOPE) held.close();
        SCOPE.setRelease(this, CLOSED_SCOPE);
    }

    /**
     * Closes a pinned block and runs its pins' {@code onClose}; false if the pins were all released meanwhile. The
     * scope is closed now if the closer may (anyone a shared one, the holder a confined one); otherwise the owner closes
     * it when it collects the block after the last unpin, as for any mt free.
     */
    private boolean closePinned(boolean shared, boolean byOwner, Arena held) {
        BlockPin taken;
        BlockPin.List list = (BlockPin.List) link; // pinned, so it holds the pins' list
        synchronized (list) {
            int s = state;
            if ((s & STATUS) != OPEN) throw alreadyClosed();
            if (s < PIN || !STATE.compareAndSet(this, s, s | CLOSED_PINNED)) return false;
            taken = list.takeAll();
        }
        arena().closedPinned.incrementAndGet();
        if (held != null) closeHeldScope(held);
        else if (shared) scope.close();
        else if (byOwner && scope != null) closeConfinedScope();
        BlockPin.runOnClose(taken);
        return true;
    }

    private void closeConfinedScope() {
        scope.close();
        scope = null; // the owner alone writes it
    }

    // ---- pins ------------------------------------------------------------------------------------------------

    /**
     * Pins the block: until the pin is released, its memory is neither freed nor reused, even once the block is
     * closed. Any thread may pin. A pin by another thread than the block's owner costs a handshake with the owner
     * (tens of microseconds; see {@link #close()} for why) unless the block was handed off: pin on the owner, or
     * after the hand-off, where that matters.
     *
     * @param onClose run once if the block is closed while this pin is held, on the closing thread (what it throws
     *                is logged, never thrown into the close); may be null
     * @throws ResourceClosedException if the block is closed
     */
    public Pin pin(Runnable onClose) {
        return BlockPin.pin(this, onClose);
    }

    /** The pins' list, made by the first pin; null once the block is on an mt-free list (closed). */
    BlockPin.List pins() {
        Object l = link;
        if (l == null) {
            LINK.compareAndSet(this, null, new BlockPin.List());
            l = link;
        }
        return l instanceof BlockPin.List list ? list : null;
    }

    RdmaArena arena() {
        return owner.arena;
    }

    /** A large block's page run in its chunk: the first page. */
    int firstPage() {
        return chunk().page(address);
    }

    /** A large block's page run in its chunk: the pages, those of its class. */
    int pages() {
        return (int) (SizeClasses.largeSize(size) >>> SizeClasses.LOG2_PAGE);
    }

    private ResourceClosedException alreadyClosed() {
        return new ResourceClosedException("block 0x" + Long.toHexString(address) + " of " + size
                + " bytes is already closed");
    }

    /**
     * Whether a checked block's owner has its confined scope open: after an mt free only the owner can collect it
     * then. (A handed-off block is never mt-freed: its closer frees it.)
     */
    boolean hasScope() {
        return scope != null && scope != CLOSED_SCOPE;
    }

    /**
     * Collection of an mt free, in the owner or in the collector (once the owner has ended, when nobody can reach
     * its confined segment any more, or while the owner is between calls and the block has no scope): the owner
     * closes the confined scope. False if the owner closed the block too (a double close racing with the mt free):
     * it was freed locally then, and must not be freed again.
     */
    boolean finishMtFree(boolean byOwner) {
        if (((int) STATE.getOpaque(this) & STATUS) != MT_FREED) return false;
        if (byOwner && hasScope()) closeConfinedScope();
        return true;
    }

    /** The next block on the owner's mt-free list (a plain access: the list's CAS and swap order it). */
    Block nextMtFree() {
        Object next = LINK.get(this);
        return next == LAST_MT_FREE ? null : (Block) next;
    }

    /**
     * Links the block into an mt-free list. Never to null: a pin on a closed block first tries to put a pin list in
     * place of null, which would break the list.
     */
    void setNextMtFree(Block next) {
        LINK.set(this, next == null ? LAST_MT_FREE : next);
    }

    @Override
    public String toString() {
        return "Block[0x" + Long.toHexString(address) + ", " + size + " bytes" + (isOpen() ? "" : ", closed") + "]";
    }
}
