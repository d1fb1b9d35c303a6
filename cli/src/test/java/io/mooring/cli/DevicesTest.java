package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.verbs.Errno;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.DeviceInfo;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.PortAttributes;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class DevicesTest {
    /** What {@code ibv} lists (a stand-in) and the real soft provider's devices, then {@code auto}'s choice. */
    private static String print(RdmaDevices.Listing ibv, RdmaDevices.Choice auto) {
        var bytes = new ByteArrayOutputStream();
        Devices.print(List.of(ibv, RdmaDevices.listing("soft")), auto, new PrintStream(bytes, true,
                StandardCharsets.UTF_8));
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void listsTheSoftDeviceLikeIbvDevinfoAndSaysWhyIbvShowsNone() throws Exception {
        Run run = Run.of("devices");
        assertEquals(0, run.status(), run::toString);
        assertEquals("", run.err(), run::toString);
        String out = run.out();
        var ibv = RdmaDevices.listing("ibv");
        org.junit.jupiter.api.Assumptions.assumeTrue(ibv.devices().isEmpty(), "this host has RDMA devices");
        assertTrue(out.startsWith("ibv: no devices: " + ibv.whyNone() + "\n"), out);
        assertTrue(out.contains("hca_id: soft0\n"), out);
        for (String field : new String[] {"provider: +soft", "max_mr_size: +0x7fffffffffffffff", "max_qp_wr: +\\d+",
            "max_sge: +\\d+", "atomics: +yes", "mw_types: +type 1, type 2", "max_inline_data: +\\d+",
            "phys_port_cnt: +1", "port: 1", "state: +PORT_ACTIVE", "active_mtu: +4096 \\(5\\)", "port_lid: +[1-9]\\d*",
            "link_layer: +TCP", "GID\\[0\\]: +::ffff:127\\.0\\.0\\.1"}) {
            assertTrue(Pattern.compile("(?m)^ +" + field + "( |$)").matcher(out).find(), field + " in\n" + out);
        }
        assertTrue(out.contains("auto would choose soft:soft0 (provider auto: " + ibv.whyNone() + ")"), out);
    }

    @Test
    void anIbvProviderThatCannotLookIsExplainedNotFatal() {
        var noRdma = new VerbsException("ibv_get_device_list", Errno.ENOSYS.number(), "provider ibv",
                "this kernel has no RDMA support; load rdma_rxe or use provider=soft");
        String out = print(new RdmaDevices.Listing("ibv", List.of(), noRdma.getMessage()),
                new RdmaDevices.Choice("soft", "soft0", "provider auto: " + noRdma.getMessage()));
        assertTrue(out.startsWith("ibv: no devices: ibv_get_device_list on provider ibv failed with ENOSYS (38): this"
                + " kernel has no RDMA support; load rdma_rxe or use provider=soft\nhca_id: soft0\n"), out);
        assertTrue(out.contains("auto would choose soft:soft0 (provider auto: ibv_get_device_list on provider ibv"
                + " failed with ENOSYS (38)"), out);
    }

    @Test
    void anIbvDeviceIsListedLikeIbvDevinfo() {
        var rxe = new DeviceInfo("ibv", "rxe0", DeviceAttributes.builder().maxMrSize(-1L).maxQp(1).maxQpWr(2)
                .maxSge(3).maxCq(4).maxCqe(5).maxMr(6).maxMw(7).windowTypes(Set.of(MwType.TYPE_2)).maxInlineData(8)
                .ports(1).build(), List.of(new PortAttributes(1, false, Mtu.MTU_1024, 0, "Ethernet",
                List.of(new Gid(0xfe80_0000_0000_0000L, 1), Gid.of(InetAddress.getLoopbackAddress())), 1)));
        String out = print(new RdmaDevices.Listing("ibv", List.of(rxe), ""),
                new RdmaDevices.Choice("ibv", "rxe0", "provider auto: the first ibv device"));
        assertTrue(out.startsWith("hca_id: rxe0\n"), out);
        assertTrue(out.contains("max_mr_size:         0xffffffffffffffff\n"), out);
        assertTrue(out.contains("atomics:             no\n        mw_types:            type 2\n"), out);
        assertTrue(out.contains("state:       not active\n"), out);
        assertTrue(out.contains("GID[0]:      fe80:0000:0000:0000:0000:0000:0000:0001\n"
                + "                GID[1]:      ::ffff:127.0.0.1\nhca_id: soft0\n"), out);
        assertTrue(out.endsWith("auto would choose ibv:rxe0 (provider auto: the first ibv device)\n"), out);
    }

    @Test
    void argumentsAreRefused() throws Exception {
        Run run = Run.of("devices", "--verbose");
        assertEquals(2, run.status(), run::toString);
        assertTrue(run.err().startsWith("mooring devices: Unknown option: '--verbose'\nUsage: mooring devices"), run::toString);
        assertEquals("", run.out());
    }
}
