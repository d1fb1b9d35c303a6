package io.mooring.lifecycle;

import java.util.List;
import java.util.stream.Collectors;

/**
 * One or more native destroys failed during a {@code close()}, {@code closeTree()} or retry. The failed
 * resources are {@link ResourceState#FAILED} and keep their parents alive; each failure can be retried or
 * abandoned through {@link #failures()} or {@link ResourceGraph#failures()}. The first native error is the
 * cause, the others are suppressed.
 */
public final class DestroyFailedException extends MooringException {
    private static final long serialVersionUID = 1L;

    private final transient List<DestroyFailure> failures;

    DestroyFailedException(List<DestroyFailure> failures) {
        super(failures.stream()
                .map(f -> "destroy of " + f.resource() + " failed: " + f.cause())
                .collect(Collectors.joining("; "))
                + "; the resource is kept FAILED with its parents alive: retry() or abandon() it",
                failures.getFirst().cause());
        failures.stream().skip(1).forEach(f -> addSuppressed(f.cause()));
        this.failures = List.copyOf(failures);
    }

    /** The failures, in the order they happened. */
    public List<DestroyFailure> failures() {
        return failures;
    }
}
