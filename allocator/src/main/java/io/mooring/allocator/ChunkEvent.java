package io.mooring.allocator;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** JFR: a chunk was registered (its duration is the registration) or released (deregistered and unmapped). */
@Name("io.mooring.Chunk")
@Label("Chunk registration")
@Category({"Mooring", "Allocator"})
final class ChunkEvent extends Event {
    @Label("Arena")
    String arena;

    @Label("Action")
    String action;

    @Label("Address")
    long address;

    @Label("Size")
    @DataAmount
    long size;

    @Label("Huge")
    boolean huge;

    /** A begun event; callers check first that JFR is initialized (see RdmaArena). */
    static ChunkEvent begun() {
        var event = new ChunkEvent();
        event.begin();
        return event;
    }
}
