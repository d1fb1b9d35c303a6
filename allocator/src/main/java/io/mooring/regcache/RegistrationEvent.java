package io.mooring.regcache;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * JFR: a registration cache registered a region on a miss (the event's duration is the registration), or a region
 * left it (evicted, invalidated), or a registration was found leaked. Slow paths only: a hit emits nothing.
 */
@Name("io.mooring.Registration")
@Label("Registration cache")
@Category({"Mooring", "Registration cache"})
final class RegistrationEvent extends Event {
    @Label("Cache")
    String cache;

    @Label("Action")
    String action;

    @Label("Address")
    long address;

    @Label("Size")
    @DataAmount
    long size;

    @Label("Regions merged")
    int merged;

    /** A begun event; the cache checks first that JFR is initialized (see {@link RegistrationCache}). */
    static RegistrationEvent begun() {
        var event = new RegistrationEvent();
        event.begin();
        return event;
    }

    void commit(String cache, String action, CachedRegion r, int merged) {
        if (!shouldCommit()) return;
        this.cache = cache;
        this.action = action;
        this.address = r.start;
        this.size = r.length();
        this.merged = merged;
        commit();
    }
}
