package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.ChildJvm;
import io.mooring.testing.NativeTools;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Finding and opening devices by name, as an application does. */
class RdmaDevicesTest {

    @Test
    void providersAndTheirDevicesAreListedByName() {
        assertEquals(List.of("ibv", "soft"), List.copyOf(RdmaDevices.providers()));
        assertEquals("soft0", RdmaDevices.devices("soft").getFirst().name());
        var e = assertThrows(IllegalArgumentException.class, () -> RdmaDevices.devices("efa"));
        assertTrue(e.getMessage().contains("no verbs provider named 'efa'; installed: [ibv, soft]"), e.getMessage());
    }

    @Test
    void anUnknownNameIsRefusedNamingTheDevicesThereAre() {
        var e = assertThrows(IllegalArgumentException.class, () -> RdmaDevices.open("mlx5_9", ResourceGraph.create()));
        assertTrue(e.getMessage().startsWith("no RDMA device named 'mlx5_9'; devices: "), e.getMessage());
        assertTrue(e.getMessage().contains("soft0"), e.getMessage());
    }

    /**
     * A plain {@code soft0} is found without loading libibverbs (the soft provider is asked first), so an application
     * on the soft provider never maps the native library. Observed in a fresh JVM, where nothing else loaded it.
     */
    @Test
    void openingSoft0ByItsPlainNameNeverLoadsLibibverbs() throws Exception {
        NativeTools.requireLibrary("libibverbs.so.1", "libibverbs1"); // otherwise nothing could load it anyway
        Process child = new ProcessBuilder(ChildJvm.command(List.of("--enable-native-access=ALL-UNNAMED"),
                RdmaDevicesTest.class)).redirectErrorStream(true).start();
        String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(child.waitFor(60, TimeUnit.SECONDS), out);
        assertEquals(0, child.exitValue(), out);
        assertEquals("opened soft:soft0; libibverbs mapped: false\n", out);
    }

    /** The child of {@link #openingSoft0ByItsPlainNameNeverLoadsLibibverbs}. */
    public static void main(String[] args) throws Exception {
        try (DeviceContext context = RdmaDevices.open("soft0")) {
            boolean mapped = Files.readString(Path.of("/proc/self/maps")).contains("libibverbs");
            System.out.println("opened " + context.device().provider() + ":" + context.device().name()
                    + "; libibverbs mapped: " + mapped);
        }
    }
}
