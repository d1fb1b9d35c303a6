package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * The key space of one soft device: which region or window each key names. A key is a 24-bit index and a random
 * low byte, as NICs hand them out; the table maps indexes to their {@link Owner}, so that a key's index finds its
 * object and its full value (the low byte included) then confirms it.
 *
 * <p>Every request looks keys up, so a lookup is two array reads without a lock and without boxing (a map keyed by
 * {@code Integer} allocated a box per lookup once a device had handed out 128 indexes): the indexes are split into
 * pages of {@value #PAGE} entries, made when an index in them is handed out and dropped when their last one is freed.
 * Handing out and freeing, rare next to lookups, take the table's monitor.
 */
final class KeyTable {
    /** What a key index names: a memory region, a memory window, or an index being handed out. */
    sealed interface Owner permits SoftMr, SoftMw, Reserved {}

    /** Holds an index while the object that gets it is made. */
    private enum Reserved implements Owner { INDEX }

    /** Key indexes are the 24 bits of a key above its key byte; index 0 is never handed out. */
    private static final int INDEXES = 1 << 24;
    private static final int PAGE_BITS = 12;
    private static final int PAGE = 1 << PAGE_BITS;

    /** The owners of {@link #PAGE} consecutive indexes. */
    private static final class Page {
        final AtomicReferenceArray<Owner> owners = new AtomicReferenceArray<>(PAGE);
        int live; // guarded by the table
    }

    private final String device;
    private final AtomicReferenceArray<Page> pages = new AtomicReferenceArray<>(INDEXES / PAGE);
    private int nextIndex = 1; // guarded by this

    KeyTable(String device) {
        this.device = device;
    }

    /** The region whose index {@code key} carries, or null (the caller compares the full key). */
    SoftMr region(int key) {
        return owner(key) instanceof SoftMr mr ? mr : null;
    }

    /** The window whose index {@code key} carries, or null. */
    SoftMw window(int key) {
        return owner(key) instanceof SoftMw mw ? mw : null;
    }

    /** Whatever {@code key}'s index names now (an access checks region and window alike). */
    Owner owner(int key) {
        return ownerOf(key >>> 8);
    }

    private Owner ownerOf(int index) {
        Page page = pages.get(index >>> PAGE_BITS);
        return page == null ? null : page.owners.get(index & (PAGE - 1));
    }

    /**
     * Makes an MR or MW with a fresh key and enters it: a free index and a random key byte. The index counter wraps
     * after 2^24 keys; indexes still in use are skipped there, so that a key never reaches another live object.
     *
     * @throws VerbsException ENOMEM from {@code verb} if every index is in use
     */
    <T extends Owner> T add(IntFunction<T> make, String verb, String object) {
        int index = reserve(verb, object);
        T made;
        try {
            made = make.apply(index << 8 | ThreadLocalRandom.current().nextInt(256));
        } catch (RuntimeException | Error e) {
            remove(index, Reserved.INDEX);
            throw e;
        }
        pages.get(index >>> PAGE_BITS).owners.set(index & (PAGE - 1), made); // its page lives while it is reserved
        return made;
    }

    /** Reserves a free index, its page made if need be. */
    private synchronized int reserve(String verb, String object) {
        for (int tried = 0; tried < INDEXES; tried++) {
            int index = nextIndex++ & (INDEXES - 1);
            if (index == 0 || ownerOf(index) != null) continue;
            Page page = pages.get(index >>> PAGE_BITS);
            if (page == null) {
                page = new Page();
                pages.set(index >>> PAGE_BITS, page);
            }
            page.owners.set(index & (PAGE - 1), Reserved.INDEX);
            page.live++;
            return index;
        }
        throw new VerbsException(verb, Errno.ENOMEM.number(), object, "all " + (INDEXES - 1) + " key indexes of "
                + device + " are in use by memory regions and windows; deregister or deallocate some first");
    }

    /** Frees {@code index} if {@code owner} still has it. */
    synchronized void remove(int index, Owner owner) {
        Page page = pages.get(index >>> PAGE_BITS);
        if (page == null || !page.owners.compareAndSet(index & (PAGE - 1), owner, null)) return;
        if (--page.live == 0) pages.set(index >>> PAGE_BITS, null);
    }

    /** Tests only: the next key tries index {@code next} (modulo the index space), e.g. just below the wrap. */
    synchronized void restartAt(int next) {
        nextIndex = next;
    }
}
