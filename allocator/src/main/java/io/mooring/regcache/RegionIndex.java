package io.mooring.regcache;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Set;

/**
 * The cached regions sorted by start address, immutable: a hit reads the current index through one volatile field
 * and searches it without a lock (libfabric #11016: its cache's global mutex is the bottleneck under many threads),
 * and every change — a miss, a merge, an eviction, an invalidation, all far rarer and slower than a hit — publishes
 * a new copy under the cache's lock.
 *
 * <p>Regions may overlap (the same pages with other rights, or regions a merge could not join). {@code reach[i]} is
 * the furthest end among regions {@code 0..i}: a search walks back from the last region starting at or before the
 * range and stops as soon as no earlier region can reach the range's end, so it usually looks at one region.
 */
final class RegionIndex {
    static final RegionIndex EMPTY = new RegionIndex(new CachedRegion[0]);

    private final CachedRegion[] regions;
    private final long[] starts;
    private final long[] reach;
    private final long bytes;

    private RegionIndex(CachedRegion[] sorted) {
        this.regions = sorted;
        this.starts = new long[sorted.length];
        this.reach = new long[sorted.length];
        long furthest = Long.MIN_VALUE;
        long sum = 0;
        for (int i = 0; i < sorted.length; i++) {
            starts[i] = sorted[i].start;
            furthest = Math.max(furthest, sorted[i].end);
            reach[i] = furthest;
            sum += sorted[i].length();
        }
        this.bytes = sum;
    }

    /** A region covering {@code [from, to)} with at least {@code rights}, the latest-starting first; null if none. */
    CachedRegion covering(long from, long to, int rights) {
        for (int i = lastStartingAtOrBefore(from); i >= 0 && reach[i] >= to; i--) {
            CachedRegion r = regions[i];
            if (r.covers(from, to, rights)) return r;
        }
        return null;
    }

    /** Every region sharing at least one byte with {@code [from, to)}. */
    List<CachedRegion> overlapping(long from, long to) {
        List<CachedRegion> out = new ArrayList<>();
        for (int i = lastStartingAtOrBefore(to - 1); i >= 0 && reach[i] > from; i--) {
            if (regions[i].end > from) out.add(regions[i]);
        }
        return out;
    }

    private int lastStartingAtOrBefore(long address) {
        int i = Arrays.binarySearch(starts, address);
        if (i < 0) return -i - 2;
        while (i + 1 < starts.length && starts[i + 1] == address) i++; // equal starts: take the last of them
        return i;
    }

    /** This index with {@code added} (may be null) and without {@code removed}. */
    RegionIndex with(CachedRegion added, Collection<CachedRegion> removed) {
        Set<CachedRegion> gone = Set.copyOf(removed);
        List<CachedRegion> out = new ArrayList<>(regions.length + 1);
        for (CachedRegion r : regions) {
            if (!gone.contains(r)) out.add(r);
        }
        if (added != null) out.add(added);
        out.sort(Comparator.comparingLong(r -> r.start));
        return new RegionIndex(out.toArray(CachedRegion[]::new));
    }

    List<CachedRegion> all() {
        return List.of(regions);
    }

    int size() {
        return regions.length;
    }

    /** The bytes of all its regions, in use or not. */
    long bytes() {
        return bytes;
    }

    /**
     * Retires the least recently used unused regions until the unused ones left number at most {@code maxCount} and
     * hold at most {@code maxBytes}, and returns them; one a hit takes meanwhile is skipped. Under the cache's lock.
     */
    List<CachedRegion> retireLeastRecentlyUsed(long maxCount, long maxBytes) {
        List<CachedRegion> unused = new ArrayList<>();
        long count = 0;
        long bytes = 0;
        for (CachedRegion r : regions) {
            if (r.isUnused()) {
                unused.add(r);
                count++;
                bytes += r.length();
            }
        }
        unused.sort(Comparator.comparingLong(CachedRegion::lastUsed));
        List<CachedRegion> retired = new ArrayList<>();
        for (CachedRegion r : unused) {
            if (count <= maxCount && bytes <= maxBytes) break;
            if (!r.retireIfUnused()) continue; // taken by a hit meanwhile
            count--;
            bytes -= r.length();
            retired.add(r);
        }
        return retired;
    }
}
