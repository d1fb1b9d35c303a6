package io.mooring.cli;

import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.DeviceInfo;
import io.mooring.verbs.values.PortAttributes;
import java.io.PrintStream;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * {@code mooring devices}: every device of every provider with its attributes and ports, in the manner of
 * {@code ibv_devinfo -v}; a provider that shows none says why; last, what {@code mooring.provider} chooses.
 */
final class Devices {
    private Devices() {}

    /** The installed providers' devices. */
    static void print(PrintStream out) {
        Set<String> names = new TreeSet<>(Set.of("ibv", "soft")); // both always show, installed or not
        names.addAll(RdmaDevices.providers());
        print(names.stream().map(RdmaDevices::listing).toList(), RdmaDevices.choose("auto", null), out);
    }

    /** {@code listings}, then what {@code auto} chooses. */
    static void print(List<RdmaDevices.Listing> listings, RdmaDevices.Choice auto, PrintStream out) {
        for (RdmaDevices.Listing listing : listings) {
            if (listing.devices().isEmpty()) out.println(listing.provider() + ": no devices: " + listing.whyNone());
            for (DeviceInfo d : listing.devices()) device(d, out);
        }
        out.println("auto would choose " + auto.name() + " (" + auto.why() + ")");
        String configured = RdmaDevices.configuredProvider();
        if (!configured.equals("auto")) {
            out.println(RdmaDevices.PROVIDER_PROPERTY + " is set to " + configured + ": commands use that by default");
        }
    }

    private static void device(DeviceInfo d, PrintStream out) {
        DeviceAttributes a = d.attributes();
        out.println("hca_id: " + d.name());
        field(out, 1, "provider", d.provider() + "   (open as " + d + ")");
        field(out, 1, "max_mr_size", "0x" + Long.toHexString(a.maxMrSize()));
        field(out, 1, "max_qp", a.maxQp());
        field(out, 1, "max_qp_wr", a.maxQpWr());
        field(out, 1, "max_sge", a.maxSge());
        field(out, 1, "max_cq", a.maxCq());
        field(out, 1, "max_cqe", a.maxCqe());
        field(out, 1, "max_mr", a.maxMr());
        field(out, 1, "max_mw", a.maxMw());
        field(out, 1, "atomics", a.atomics() ? "yes" : "no");
        field(out, 1, "mw_types", a.windowTypes().isEmpty() ? "none" : a.windowTypes().stream().sorted()
                .map(t -> "type " + t.code()).collect(Collectors.joining(", ")));
        field(out, 1, "max_inline_data", a.maxInlineData());
        field(out, 1, "phys_port_cnt", a.ports());
        for (PortAttributes p : d.ports()) {
            out.println("        port: " + p.port());
            field(out, 2, "state", p.active() ? "PORT_ACTIVE" : "not active");
            field(out, 2, "active_mtu", p.activeMtu().bytes() + " (" + p.activeMtu().code() + ")");
            field(out, 2, "port_lid", p.lid());
            field(out, 2, "link_layer", p.linkLayer());
            for (int i = 0; i < p.gids().size(); i++) field(out, 2, "GID[" + i + "]", p.gids().get(i));
        }
    }

    private static void field(PrintStream out, int depth, String name, Object value) {
        out.printf("%s%-" + (28 - 8 * depth) + "s %s%n", " ".repeat(8 * depth), name + ":", value);
    }
}
