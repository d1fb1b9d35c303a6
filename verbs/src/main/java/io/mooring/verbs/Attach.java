package io.mooring.verbs;

import io.mooring.lifecycle.DestroyAction;
import io.mooring.lifecycle.Pin;
import io.mooring.lifecycle.Resource;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Creates a native object under its parents in the lifecycle graph: the parents are pinned while the native
 * call runs (so none can be destroyed under it), then the object is attached; if a parent was closed
 * meanwhile, the graph undoes the native object and the creation fails naming it.
 */
final class Attach {
    private Attach() {}

    /** A native object's provider ops and its place in the graph. */
    record Made<O>(O ops, Resource resource) {}

    static <O> Made<O> make(String kind, Supplier<O> create, Function<O, String> describe,
                            Function<O, DestroyAction> destroy, Resource... parents) {
        Pin[] pins = new Pin[parents.length];
        try {
            for (int i = 0; i < parents.length; i++) pins[i] = parents[i].pin();
            O ops = create.get();
            Resource r = parents[0].graph().create(kind, describe.apply(ops), destroy.apply(ops), parents);
            return new Made<>(ops, r);
        } finally {
            for (Pin p : pins) if (p != null) p.close();
        }
    }
}
