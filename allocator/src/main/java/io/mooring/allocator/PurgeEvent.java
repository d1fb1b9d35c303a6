package io.mooring.allocator;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** JFR: a purge released wholly free chunks. */
@Name("io.mooring.Purge")
@Label("Arena purge")
@Category({"Mooring", "Allocator"})
final class PurgeEvent extends Event {
    @Label("Arena")
    String arena;

    @Label("Chunks released")
    int chunks;

    @Label("Bytes released")
    @DataAmount
    long bytes;

    /** A begun event; callers check first that JFR is initialized (see RdmaArena). */
    static PurgeEvent begun() {
        var event = new PurgeEvent();
        event.begin();
        return event;
    }
}
