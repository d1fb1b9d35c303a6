package io.mooring.lease;

import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.MemoryWindow;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.DeviceInfo;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Finds out once per device whether a type 2 memory window confines a peer to its QP and to its range: a window is
 * bound on one QP over the first half of a region; a write through its key arriving on <em>another</em> QP of the
 * same protection domain must fail, or leases could not keep peers apart ({@link Isolation}) and the endpoint
 * refuses to lease at all; then a write through the window's own QP just past the window's end. A device that
 * refuses that write (REM_ACCESS_ERR) gets {@link Isolation#WINDOW}; one that lets it through — rxe does — gets
 * {@link Isolation#DEDICATED_REGISTRATION}. Any other outcome of either write (its NAK lost, so RETRY_EXC_ERR or a
 * flush) says nothing about the window: the probe runs again, at most {@value #ATTEMPTS} times. The answer is a
 * property of the device, so it is kept per device for the JVM's life: a session set up later pays nothing for it.
 */
final class IsolationProbe {
    private static final long HALF = 4096;
    private static final Duration WAIT = Duration.ofSeconds(10);
    static final int ATTEMPTS = 5;
    /** By device (provider, name, attributes); two sessions probing a new device at once may both run the probe. */
    private static final Map<DeviceInfo, Isolation> FOUND = new ConcurrentHashMap<>();

    private IsolationProbe() {}

    /**
     * The isolation of {@code pd}'s device: found by {@link #run} the first time, remembered after.
     *
     * @throws IllegalStateException if the device cannot confine a window to its QP
     */
    static Isolation probe(ProtectionDomain pd) {
        DeviceInfo device = pd.context().device();
        Isolation found = FOUND.get(device);
        if (found == null) {
            found = run(pd);
            FOUND.putIfAbsent(device, found);
        }
        return found;
    }

    /**
     * Runs the probe on {@code pd}'s device with objects made and destroyed for it.
     *
     * @throws IllegalStateException if no attempt could tell (the write's answer was lost each time)
     */
    static Isolation run(ProtectionDomain pd) {
        if (!pd.context().device().attributes().windowTypes().contains(MwType.TYPE_2)) {
            throw cannotConfine(pd, "it has no type 2 memory windows");
        }
        WcStatus[] outcome = new WcStatus[1];
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            Isolation found = attempt(pd, outcome);
            if (found != null) return found;
        }
        throw new IllegalStateException("the isolation probe of " + pd.context().device().name() + " could not tell"
                + " in " + ATTEMPTS + " attempts whether a window confines a peer: a probe write ended "
                + outcome[0] + ", neither refused nor done (packets lost?); set RdmaEndpoint.Builder.isolation");
    }

    /** One probe: its answer, or null if the write's outcome (in {@code outcome}) says nothing about the window. */
    private static Isolation attempt(ProtectionDomain pd, WcStatus[] outcome) {
        try (Arena memory = Arena.ofShared()) {
            CompletionQueue cq = pd.context().createCompletionQueue(16);
            QueuePair owner = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            QueuePair peer = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            QueuePair strangersOwner = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            QueuePair stranger = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            MemoryRegion target = pd.register(memory.allocate(2 * HALF, HALF),
                    EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.MW_BIND));
            MemoryRegion source = pd.register(memory.allocate(8, 8), EnumSet.of(Access.LOCAL_WRITE));
            MemoryWindow window = pd.allocateWindow(MwType.TYPE_2);
            try {
                owner.connect(peer.info());
                peer.connect(owner.info());
                strangersOwner.connect(stranger.info());
                stranger.connect(strangersOwner.info());
                owner.post(WorkRequest.bind(window, target, 0, HALF, EnumSet.of(Access.REMOTE_WRITE)));
                WcStatus bound = next(cq).status();
                if (bound != WcStatus.SUCCESS) throw cannotConfine(pd, "binding a type 2 window failed: " + bound);
                stranger.post(WorkRequest.write(source, 0, 8).remote(target.address(), window.rkey()));
                outcome[0] = next(cq).status();
                if (outcome[0] == WcStatus.SUCCESS) {
                    throw cannotConfine(pd, "a type 2 window bound on one QP let a write in through another");
                }
                if (outcome[0] != WcStatus.REM_ACCESS_ERR) return null;
                peer.post(WorkRequest.write(source, 0, 8).remote(target.address() + HALF, window.rkey()));
                outcome[0] = next(cq).status();
                return switch (outcome[0]) {
                    case REM_ACCESS_ERR -> Isolation.WINDOW;
                    case SUCCESS -> Isolation.DEDICATED_REGISTRATION;
                    default -> null;
                };
            } finally {
                // Children first; the region's memory (the arena) goes after the graph is done with it.
                window.close();
                owner.close();
                peer.close();
                strangersOwner.close();
                stranger.close();
                target.close();
                source.close();
                cq.close();
            }
        }
    }

    private static IllegalStateException cannotConfine(ProtectionDomain pd, String why) {
        return new IllegalStateException(pd.context().device() + " cannot confine a lease to one peer: " + why
                + "; only Isolation.WHOLE_REGION, for trusted peers, can lease on it");
    }

    private static WorkCompletion next(CompletionQueue cq) {
        WorkCompletion[] one = {new WorkCompletion()};
        try {
            if (cq.poll(one, WAIT) == 1) return one[0];
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new IllegalStateException("the isolation probe got no completion within " + WAIT);
    }
}
