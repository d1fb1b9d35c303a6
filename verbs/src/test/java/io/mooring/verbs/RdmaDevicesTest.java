package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.ChildJvm;
import io.mooring.testing.NativeTools;
import io.mooring.verbs.values.DeviceInfo;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
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

    /** The real soft provider next to an {@code ibv} stand-in that lists what {@code ibv} gives or throws. */
    private static DeviceChooser withIbv(Supplier<List<DeviceInfo>> ibv) {
        return new DeviceChooser(Map.of("soft", () -> RdmaDevices.devices("soft"), "ibv", ibv));
    }

    @Test
    void autoTakesTheFirstIbvDeviceWhenThereIsOneAndSaysWhy() {
        var rxe = new DeviceInfo("ibv", "rxe0", RdmaDevices.devices("soft").getFirst().attributes(), List.of());
        DeviceChooser chooser = withIbv(() -> List.of(rxe));
        assertEquals(new RdmaDevices.Choice("ibv", "rxe0", "provider auto: the first ibv device"),
                chooser.choose("auto", null));
        assertEquals(new RdmaDevices.Choice("ibv", "rxe0", "provider ibv: its first device"),
                chooser.choose("ibv", null));
        assertEquals("ibv:rxe1", chooser.choose("ibv", "rxe1").name(), "a named ibv device is not looked up");
        assertEquals("soft:soft0", chooser.choose("auto", "soft0").name(), "auto finds a named device where it is");
        assertEquals("ibv:rxe0", chooser.choose("auto", "rxe0").name());
        assertEquals("soft:soft0", chooser.choose("soft", null).name());
        var none = assertThrows(IllegalArgumentException.class, () -> chooser.choose("auto", "mlx5_9"));
        assertTrue(none.getMessage().startsWith("no RDMA device named 'mlx5_9'; devices: "), none.getMessage());
        var bad = assertThrows(IllegalArgumentException.class, () -> chooser.choose("efa", null));
        assertEquals("provider efa names no provider choice; use soft, ibv, auto", bad.getMessage());
    }

    @Test
    void anIbvProviderThatCannotLookIsExplainedAndAutoTakesSoft() {
        var noRdma = new VerbsException("ibv_get_device_list", Errno.ENOSYS.number(), "provider ibv",
                "this kernel has no RDMA support");
        DeviceChooser chooser = withIbv(() -> { throw noRdma; });
        assertEquals(new RdmaDevices.Listing("ibv", List.of(), noRdma.getMessage()), chooser.list("ibv"));
        assertEquals(new RdmaDevices.Choice("soft", "soft0", "provider auto: " + noRdma.getMessage()),
                chooser.choose("auto", null));
        var forced = assertThrows(IllegalArgumentException.class, () -> chooser.choose("ibv", null));
        assertEquals("provider ibv, but ibv shows no devices: " + noRdma.getMessage() + "; choose provider soft",
                forced.getMessage());
        DeviceChooser softOnly = new DeviceChooser(Map.of("soft", () -> RdmaDevices.devices("soft")));
        assertEquals("the ibv provider is not installed in this build; installed: soft",
                softOnly.list("ibv").whyNone());
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
