package io.mooring.verbs.ibv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.Errno;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.VerbsException;
import io.mooring.testing.NativeTools;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code ibv} provider on a machine without RDMA (this build host: {@code ibv_get_device_list} returns
 * NULL with ENOSYS, or libibverbs is not even installed): it lists nothing, says why, lets {@code auto} fall back
 * to {@code soft}, and leaks nothing. Skipped where an ibv device exists (the rxe VM), where the conformance suite
 * covers the provider instead.
 */
class IbvWithoutDeviceTest {
    private static final String LIBRARY = "libibverbs.so.1";
    private String savedProvider;

    @BeforeEach
    void onlyWithoutDevices() {
        boolean devices;
        try {
            devices = !new IbvProvider().devices().isEmpty();
        } catch (VerbsException e) {
            devices = false;
        }
        Assumptions.assumeFalse(devices, "an ibv device exists here: the no-device behaviour cannot be observed");
        savedProvider = System.getProperty(RdmaDevices.PROVIDER_PROPERTY);
    }

    @AfterEach
    void restore() {
        if (savedProvider == null) System.clearProperty(RdmaDevices.PROVIDER_PROPERTY);
        else System.setProperty(RdmaDevices.PROVIDER_PROPERTY, savedProvider);
    }

    @Test
    void theProviderIsInstalledNextToSoft() {
        assertEquals(List.of("ibv", "soft"), List.copyOf(RdmaDevices.providers()));
    }

    @Test
    void listingSaysThereIsNoRdmaInThisKernel() {
        requireLibibverbs();
        var e = assertThrows(VerbsException.class, () -> new IbvProvider().devices());
        assertEquals("ibv_get_device_list", e.verb());
        assertEquals(Errno.ENOSYS.number(), e.errno(), e::getMessage);
        assertTrue(e.getMessage().contains("no RDMA support in this kernel: load rdma_rxe (Soft-RoCE) or use"
                + " mooring.provider=soft"), e.getMessage());
        assertTrue(e.getMessage().contains("ENOSYS (38)"), e.getMessage());
    }

    @Test
    void openingByNameGivesTheSameReason() {
        requireLibibverbs();
        var e = assertThrows(VerbsException.class, () -> new IbvProvider().open("rxe0", (type, cq, number) -> { }));
        assertEquals(Errno.ENOSYS.number(), e.errno(), e::getMessage);
        var byName = assertThrows(VerbsException.class, () -> RdmaDevices.open("ibv:rxe0"));
        assertEquals(Errno.ENOSYS.number(), byName.errno(), byName::getMessage);
    }

    @Test
    void autoFallsBackToSoft() {
        System.setProperty(RdmaDevices.PROVIDER_PROPERTY, "auto");
        ResourceGraph graph = ResourceGraph.builder().name("auto").build();
        try (DeviceContext ctx = RdmaDevices.openDefault(graph)) {
            assertEquals("soft", ctx.device().provider());
        }
        graph.close();
        assertEquals(0, graph.liveCount());
        assertFalse(RdmaDevices.list().isEmpty(), "list() still shows the soft devices");
        assertTrue(RdmaDevices.list().stream().allMatch(d -> d.provider().equals("soft")));
    }

    @Test
    void forcingIbvFailsWithTheEnosysHint() {
        requireLibibverbs();
        System.setProperty(RdmaDevices.PROVIDER_PROPERTY, "ibv");
        var e = assertThrows(IllegalArgumentException.class, RdmaDevices::openDefault);
        assertTrue(e.getMessage().startsWith("mooring.provider=ibv, but ibv shows no devices: "), e.getMessage());
        assertTrue(e.getMessage().contains("ENOSYS") && e.getMessage().contains("load rdma_rxe"), e.getMessage());
    }

    @Test
    void withoutLibibverbsTheErrorSaysWhatToInstall() {
        Assumptions.assumeFalse(NativeTools.hasLibrary(LIBRARY), LIBRARY + " is installed: dlopen succeeds here");
        var e = assertThrows(VerbsException.class, () -> new IbvProvider().devices());
        assertEquals("dlopen", e.verb());
        assertTrue(e.getMessage().contains("install rdma-core's libibverbs1"), e.getMessage());
        System.setProperty(RdmaDevices.PROVIDER_PROPERTY, "auto");
        ResourceGraph graph = ResourceGraph.builder().name("auto").build();
        try (DeviceContext ctx = RdmaDevices.openDefault(graph)) {
            assertEquals("soft", ctx.device().provider(), "auto falls back to soft without libibverbs too");
        }
        graph.close();
        assertEquals(0, graph.liveCount());
    }

    private static void requireLibibverbs() {
        NativeTools.requireLibrary(LIBRARY, "libibverbs1");
    }

    @Test
    void repeatedLookupsLeakNothing() throws IOException {
        var provider = new IbvProvider();
        for (int i = 0; i < 50; i++) assertThrows(VerbsException.class, provider::devices); // warm up
        long fds = openFds();
        long bytes = IbvProvider.nativeBytesInUse();
        for (int i = 0; i < 2_000; i++) assertThrows(VerbsException.class, provider::devices);
        assertEquals(bytes, IbvProvider.nativeBytesInUse());
        assertEquals(0, NativeBlock.liveBlocks());
        assertEquals(fds, openFds(), "file descriptors leaked by ibv_get_device_list failures");
    }

    private static long openFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }
}
