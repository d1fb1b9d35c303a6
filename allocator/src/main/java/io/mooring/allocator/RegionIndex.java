package io.mooring.allocator;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The cached regions by start address, answering the cache's two questions: which region covers a range, and
 * which regions overlap one. Regions may overlap each other (same pages with other rights, or a larger range
 * registered after a smaller one). Not thread-safe: the cache's lock guards it.
 */
final class RegionIndex {
    private final TreeMap<Long, List<CachedRegion>> byStart = new TreeMap<>();
    /**
     * The longest region ever added. A region that starts more than this before a range cannot reach into it, which
     * bounds every scan; it never shrinks, so after the longest region goes a scan may look further than needed.
     */
    private long longest;

    void add(CachedRegion r) {
        byStart.computeIfAbsent(r.start, k -> new ArrayList<>(1)).add(r);
        longest = Math.max(longest, r.length);
    }

    void remove(CachedRegion r) {
        List<CachedRegion> at = byStart.get(r.start);
        at.remove(r);
        if (at.isEmpty()) byStart.remove(r.start);
    }

    /** A region covering {@code [from, to)} with at least {@code rights}, nearest start first; null if none. */
    CachedRegion covering(long from, long to, int rights) {
        for (Map.Entry<Long, List<CachedRegion>> e : byStart.headMap(from, true).descendingMap().entrySet()) {
            if (e.getKey() < to - longest) break;
            for (CachedRegion r : e.getValue()) {
                if (r.covers(from, to, rights)) return r;
            }
        }
        return null;
    }

    /** Every region sharing at least one byte with {@code [from, to)}. */
    List<CachedRegion> overlapping(long from, long to) {
        List<CachedRegion> out = new ArrayList<>();
        for (List<CachedRegion> at : byStart.subMap(from - longest, false, to, false).values()) {
            for (CachedRegion r : at) {
                if (r.end() > from) out.add(r);
            }
        }
        return out;
    }

    List<CachedRegion> all() {
        List<CachedRegion> out = new ArrayList<>();
        byStart.values().forEach(out::addAll);
        return out;
    }
}
