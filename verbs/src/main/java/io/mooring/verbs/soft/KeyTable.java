package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * The key space of one soft device: which region or window each key names. A key is a 24-bit index and a random
 * low byte, as NICs hand them out; the table maps indexes to their {@link Owner}, so that a key's index finds its
 * object and its full value (the low byte included) then confirms it.
 */
final class KeyTable {
    /** What a key index names: a memory region, a memory window, or an index being handed out. */
    sealed interface Owner permits SoftMr, SoftMw, Reserved {}

    /** Holds an index while the object that gets it is made. */
    private enum Reserved implements Owner { INDEX }

    /** Key indexes are the 24 bits of a key above its key byte; index 0 is never handed out. */
    private static final int INDEXES = 1 << 24;

    private final String device;
    private final Map<Integer, Owner> owners = new ConcurrentHashMap<>();
    private final AtomicInteger nextIndex = new AtomicInteger(1);

    KeyTable(String device) {
        this.device = device;
    }

    /** The region whose index {@code key} carries, or null (the caller compares the full key). */
    SoftMr region(int key) {
        return owners.get(key >>> 8) instanceof SoftMr mr ? mr : null;
    }

    /** The window whose index {@code key} carries, or null. */
    SoftMw window(int key) {
        return owners.get(key >>> 8) instanceof SoftMw mw ? mw : null;
    }

    /** Whatever {@code key}'s index names now (an access checks region and window alike). */
    Owner owner(int key) {
        return owners.get(key >>> 8);
    }

    /**
     * Makes an MR or MW with a fresh key and enters it: a free index and a random key byte. The index counter wraps
     * after 2^24 keys; indexes still in use are skipped there, so that a key never reaches another live object.
     *
     * @throws VerbsException ENOMEM from {@code verb} if every index is in use
     */
    <T extends Owner> T add(IntFunction<T> make, String verb, String object) {
        for (int tried = 0; tried < INDEXES; tried++) {
            int index = nextIndex.getAndIncrement() & (INDEXES - 1);
            if (index == 0 || owners.putIfAbsent(index, Reserved.INDEX) != null) continue;
            T made;
            try {
                made = make.apply(index << 8 | ThreadLocalRandom.current().nextInt(256));
            } catch (RuntimeException | Error e) {
                owners.remove(index, Reserved.INDEX);
                throw e;
            }
            owners.put(index, made);
            return made;
        }
        throw new VerbsException(verb, Errno.ENOMEM.number(), object, "all " + (INDEXES - 1) + " key indexes of "
                + device + " are in use by memory regions and windows; deregister or deallocate some first");
    }

    /** Frees {@code index} if {@code owner} still has it. */
    void remove(int index, Owner owner) {
        owners.remove(index, owner);
    }

    /** Tests only: the next key tries index {@code next} (modulo the index space), e.g. just below the wrap. */
    void restartAt(int next) {
        nextIndex.set(next);
    }
}
