package io.mooring.lease;

import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.Access;
import io.mooring.verbs.ConnectOptions;
import io.mooring.verbs.ProtectionDomain;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;

/**
 * What a {@link RdmaSession} runs on and with.
 *
 * @param pd             the protection domain of the session's QP, windows and memory
 * @param arena          where leased blocks and control buffers come from (in {@code pd}; its regions need
 *                       LOCAL_WRITE and MW_BIND, plus remote rights for {@link Isolation#WHOLE_REGION})
 * @param limits         what the peer may hold
 * @param isolation      how leases are confined; null probes the device once ({@link IsolationProbe})
 * @param requestTimeout how long a REQUEST, RENEW or RELEASE waits for its answer
 * @param connect        how the QP is connected
 */
public record SessionConfig(ProtectionDomain pd, RdmaArena arena, LeaseLimits limits, Isolation isolation,
                            Duration requestTimeout, ConnectOptions connect) {
    public SessionConfig {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(arena, "arena");
        Objects.requireNonNull(limits, "limits");
        Objects.requireNonNull(requestTimeout, "requestTimeout");
        Objects.requireNonNull(connect, "connect");
        // Checked here, not at the first grant, where a missing right would fail on the NIC and end the session.
        Set<Access> rights = arena.access();
        if (!rights.contains(Access.LOCAL_WRITE)) {
            throw new IllegalArgumentException("a session's arena needs LOCAL_WRITE (the NIC writes received control"
                    + " messages and what peers write), but it registers its chunks with " + rights);
        }
        if ((isolation == null || isolation == Isolation.WINDOW) && !rights.contains(Access.MW_BIND)) {
            throw new IllegalArgumentException("a session's arena needs MW_BIND to lease blocks through memory"
                    + " windows, but it registers its chunks with " + rights + ": add MW_BIND to its access, or use"
                    + " Isolation.DEDICATED_REGISTRATION");
        }
    }

    /** Default limits, probed isolation, 10 s request timeout, default connection options. */
    public static SessionConfig of(ProtectionDomain pd, RdmaArena arena) {
        return new SessionConfig(pd, arena, LeaseLimits.DEFAULT, null, Duration.ofSeconds(10), ConnectOptions.DEFAULT);
    }

    public SessionConfig withLimits(LeaseLimits l) {
        return new SessionConfig(pd, arena, l, isolation, requestTimeout, connect);
    }

    public SessionConfig withIsolation(Isolation i) {
        return new SessionConfig(pd, arena, limits, i, requestTimeout, connect);
    }
}
