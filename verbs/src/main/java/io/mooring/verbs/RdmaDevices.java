package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.spi.VerbsProvider;
import io.mooring.verbs.values.DeviceInfo;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

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

    /** The names of the installed providers ({@code ibv}, {@code soft}), sorted. */
    public static SortedSet<String> providers() {
        return new TreeSet<>(installed().keySet());
    }

    /**
     * The devices of one provider.
     *
     * @throws IllegalArgumentException naming the installed providers if there is none called {@code provider}
     * @throws VerbsException saying why, if the provider cannot look (no libibverbs, no RDMA in this kernel)
     */
    public static List<DeviceInfo> devices(String provider) {
        return provider(provider).devices();
    }

    /** Every device of every provider; a provider that cannot look (no RDMA in this kernel) lists none. */
    public static List<DeviceInfo> list() {
        List<DeviceInfo> all = new ArrayList<>();
        for (VerbsProvider p : installed().values()) all.addAll(devicesOrNone(p));
        return all;
    }

    private static List<DeviceInfo> devicesOrNone(VerbsProvider p) {
        try {
            return p.devices();
        } catch (VerbsException e) {
            LOG.log(Level.DEBUG, "provider " + p.name() + " lists no devices: " + e.getMessage());
            return List.of();
        }
    }

    /** The installed providers by name, {@code soft} first: it is looked at without loading any native library. */
    private static Map<String, VerbsProvider> installed() {
        Map<String, VerbsProvider> byName = new TreeMap<>(Comparator.comparing((String n) -> !n.equals("soft"))
                .thenComparing(Comparator.naturalOrder()));
        for (VerbsProvider p : ServiceLoader.load(VerbsProvider.class, RdmaDevices.class.getClassLoader())) {
            byName.put(p.name(), p);
        }
        return byName;
    }

    /** A provider by name, or an {@link IllegalArgumentException} naming the installed ones. */
    static VerbsProvider provider(String name) {
        VerbsProvider p = installed().get(name);
        if (p == null) {
            throw new IllegalArgumentException("no verbs provider named '" + name + "'; installed: " + providers());
        }
        return p;
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
        VerbsProvider ibv = installed().get("ibv");
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

    /**
     * Both providers reach memory by address (the soft one as its NIC would), which FFM restricts: a JVM that denies
     * this module native access is refused here, with the flags to add, rather than at its first registration.
     */
    @SuppressWarnings("restricted") // a zero-length view of NULL: touches nothing, only asks the JVM for permission
    private static void requireNativeAccess() {
        if (RdmaDevices.class.getModule().isNativeAccessEnabled()) return;
        try {
            MemorySegment.NULL.reinterpret(0);
        } catch (IllegalCallerException denied) {
            throw new IllegalCallerException("a verbs device reaches memory by address through FFM, and this JVM"
                    + " denies it native access: " + VerbsException.NATIVE_ACCESS_HINT, denied);
        }
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

    /**
     * Opens a device by name in {@code graph}. A plain name is looked for provider by provider, {@code soft} first,
     * so {@code soft0} opens without libibverbs ever being loaded; {@code provider:name} asks that provider only.
     */
    public static DeviceContext open(String name, ResourceGraph graph) {
        int colon = name.indexOf(':');
        if (colon >= 0) return open(provider(name.substring(0, colon)), name.substring(colon + 1), graph);
        for (VerbsProvider p : installed().values()) {
            for (DeviceInfo d : devicesOrNone(p)) {
                if (d.name().equals(name)) return open(p, name, graph);
            }
        }
        throw new IllegalArgumentException("no RDMA device named '" + name + "'; devices: " + list());
    }

    private static DeviceContext open(VerbsProvider provider, String device, ResourceGraph graph) {
        requireNativeAccess();
        var events = new AsyncEvents(provider.name() + ":" + device);
        ContextOps ops = provider.open(device, events);
        var resource = graph.create("context", provider.name() + ":" + device, ops::close);
        return new DeviceContext(ops, resource, events);
    }
}
