package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.spi.VerbsProvider;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * Where RDMA devices are found and opened. Two providers stand behind one API: {@code ibv} (rdma-core's
 * libibverbs through FFM: real NICs and Soft-RoCE) and {@code soft} (pure Java, runs anywhere).
 *
 * <p>{@link #openDefault()} picks by {@value #PROVIDER_PROPERTY} (or the environment variable
 * {@code MOORING_PROVIDER}): {@code ibv}, {@code soft}, or {@code auto} (the default), which takes the first
 * {@code ibv} device when one exists and {@code soft0} otherwise, and logs which and why.
 */
public final class RdmaDevices {
    public static final String PROVIDER_PROPERTY = "mooring.provider";
    private static final System.Logger LOG = System.getLogger(RdmaDevices.class.getName());
    private static final ResourceGraph GRAPH = ResourceGraph.builder().name("verbs").build();

    private RdmaDevices() {}

    /** The graph that every device opened without an explicit graph joins (see {@link ResourceGraph#dump()}). */
    public static ResourceGraph graph() {
        return GRAPH;
    }

    /** The installed providers by name. */
    public static Map<String, VerbsProvider> providers() {
        Map<String, VerbsProvider> byName = new TreeMap<>();
        for (VerbsProvider p : ServiceLoader.load(VerbsProvider.class, RdmaDevices.class.getClassLoader())) {
            byName.put(p.name(), p);
        }
        return byName;
    }

    /**
     * A provider by name.
     *
     * @throws IllegalArgumentException naming the installed providers if there is none by that name
     */
    public static VerbsProvider provider(String name) {
        VerbsProvider p = providers().get(name);
        if (p == null) {
            throw new IllegalArgumentException("no verbs provider named '" + name + "'; installed: " + providers().keySet());
        }
        return p;
    }

    /** Every device of every provider; a provider that cannot look (no RDMA in this kernel) lists none. */
    public static List<DeviceInfo> list() {
        List<DeviceInfo> all = new ArrayList<>();
        for (VerbsProvider p : providers().values()) {
            try {
                all.addAll(p.devices());
            } catch (VerbsException e) {
                LOG.log(Level.DEBUG, "provider " + p.name() + " lists no devices: " + e.getMessage());
            }
        }
        return all;
    }

    /** Opens the device chosen by {@value #PROVIDER_PROPERTY} (see the class comment) in {@link #graph()}. */
    public static DeviceContext openDefault() {
        return openDefault(GRAPH);
    }

    /** Opens the default device in {@code graph}. */
    public static DeviceContext openDefault(ResourceGraph graph) {
        String choice = configuredProvider();
        return switch (choice) {
            case "soft" -> open(provider("soft"), "soft0", graph);
            case "ibv" -> {
                List<DeviceInfo> devices = provider("ibv").devices();
                if (devices.isEmpty()) {
                    throw new VerbsException("ibv_get_device_list", 0, "provider ibv", "no RDMA device found:"
                            + " load rdma_rxe (Soft-RoCE) or use -D" + PROVIDER_PROPERTY + "=soft");
                }
                yield open(provider("ibv"), devices.getFirst().name(), graph);
            }
            case "auto" -> openAuto(graph);
            default -> throw new IllegalArgumentException(PROVIDER_PROPERTY + "=" + choice
                    + " names no provider choice; use auto, ibv or soft");
        };
    }

    private static DeviceContext openAuto(ResourceGraph graph) {
        VerbsProvider ibv = providers().get("ibv");
        String why;
        if (ibv == null) {
            why = "the ibv provider is not installed";
        } else {
            try {
                List<DeviceInfo> devices = ibv.devices();
                if (!devices.isEmpty()) {
                    LOG.log(Level.INFO, "mooring.provider=auto: using ibv device " + devices.getFirst().name());
                    return open(ibv, devices.getFirst().name(), graph);
                }
                why = "ibv found no RDMA device";
            } catch (VerbsException e) {
                why = e.getMessage();
            }
        }
        LOG.log(Level.INFO, "mooring.provider=auto: using soft0 (" + why + ")");
        return open(provider("soft"), "soft0", graph);
    }

    /** The provider choice: the system property, else {@code MOORING_PROVIDER}, else {@code auto}. */
    public static String configuredProvider() {
        String v = System.getProperty(PROVIDER_PROPERTY);
        if (v == null) v = System.getenv("MOORING_PROVIDER");
        return v == null ? "auto" : v.trim().toLowerCase(Locale.ROOT);
    }

    /**
     * Opens a device by name ({@code soft0}, {@code rxe0}, or {@code provider:name}) in {@link #graph()}.
     *
     * @throws IllegalArgumentException naming the devices there are, if none has that name
     */
    public static DeviceContext open(String name) {
        return open(name, GRAPH);
    }

    public static DeviceContext open(String name, ResourceGraph graph) {
        int colon = name.indexOf(':');
        if (colon >= 0) return open(provider(name.substring(0, colon)), name.substring(colon + 1), graph);
        for (DeviceInfo d : list()) {
            if (d.name().equals(name)) return open(provider(d.provider()), name, graph);
        }
        throw new IllegalArgumentException("no RDMA device named '" + name + "'; devices: " + list());
    }

    private static DeviceContext open(VerbsProvider provider, String device, ResourceGraph graph) {
        ContextOps ops = provider.open(device);
        var resource = graph.create("context", provider.name() + ":" + device, ops::close);
        return new DeviceContext(ops, resource);
    }
}
