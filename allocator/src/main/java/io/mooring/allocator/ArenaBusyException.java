package io.mooring.allocator;

import io.mooring.lifecycle.MooringException;
import java.util.stream.Collectors;

/** A STRICT close found live blocks; the arena stays open. Lists the live counts per class. */
public final class ArenaBusyException extends MooringException {
    private static final long serialVersionUID = 1L;

    private final transient ArenaStats stats;

    ArenaBusyException(String arena, ArenaStats stats) {
        super("cannot close " + arena + " (policy STRICT): " + stats.liveBlocks() + " blocks are live: "
                + stats.classes().stream().filter(c -> c.live() > 0)
                        .map(c -> c.live() + " × " + c.size() + " B").collect(Collectors.joining(", "))
                + (stats.largeAllocations() > stats.largeFrees()
                        ? ", " + (stats.largeAllocations() - stats.largeFrees()) + " large" : "")
                + (stats.hugeAllocations() > stats.hugeFrees()
                        ? ", " + (stats.hugeAllocations() - stats.hugeFrees()) + " huge" : ""));
        this.stats = stats;
    }

    /** The stats when the close was refused. */
    public ArenaStats stats() {
        return stats;
    }
}
