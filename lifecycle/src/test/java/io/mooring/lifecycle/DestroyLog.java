package io.mooring.lifecycle;

import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/** Destroy actions for tests that record what was destroyed, in order, and count runs per name. */
final class DestroyLog {
    private final List<String> order = new CopyOnWriteArrayList<>();
    private final ConcurrentHashMap<String, AtomicInteger> runs = new ConcurrentHashMap<>();

    DestroyAction action(String name) {
        return () -> {
            runs.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
            order.add(name);
        };
    }

    /** An action that fails the first {@code failures} times it runs, as a native call returning EBUSY would. */
    DestroyAction failing(String name, int failures) {
        var remaining = new AtomicInteger(failures);
        return () -> {
            if (remaining.getAndDecrement() > 0) throw new IllegalStateException("EBUSY from destroy of " + name);
            action(name).destroy();
        };
    }

    List<String> order() {
        return List.copyOf(order);
    }

    int runs(String name) {
        AtomicInteger n = runs.get(name);
        return n == null ? 0 : n.get();
    }

    boolean destroyed(String name) {
        return runs(name) > 0;
    }
}
