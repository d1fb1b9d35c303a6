package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.spi.VerbsProvider;
import io.mooring.verbs.values.DeviceInfo;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * Where RDMA devices are found and opened. Two providers stand behind one API: {@code ibv} (rdma-core's
 * libibverbs through FFM: real NICs and Soft-RoCE) and {@code soft} (pure Java, runs anywhere).
 *
 * <p>{@link #choose} is the one rule by which a device is chosen, and says why; {@link #openDefault()} opens its
 * choice by {@value #PROVIDER_PROPERTY} (or the environment variable {@code MOORING_PROVIDER}): {@code ibv},
 * {@code soft}, or {@code auto} (the default), which takes the first {@code ibv} device when one exists and
 * {@code soft0} otherwise, and logs which and why.
 */
public final class RdmaDevices {
    public static final String PROVIDER_PROPERTY = "mooring.provider";
    /** What {@value #PROVIDER_PROPERTY} and {@link #choose}'s provider take. */
    public static final List<String> PROVIDER_CHOICES = List.of("soft", "ibv", "auto");
    private static final System.Logger LOG = System.getLogger(RdmaDevices.class.getName());
    private static final ResourceGraph GRAPH = ResourceGraph.builder().name("verbs").build();

    private RdmaDevices() {}

    /** The device to open ({@code provider:device}), and why it was chosen. */
    public record Choice(String provider, String device, String why) {
        /** The name {@link RdmaDevices#open(String, ResourceGraph)} takes: {@code provider:device}. */
        public String name() {
            return provider + ":" + device;
        }

        public DeviceContext open(ResourceGraph graph) {
            return RdmaDevices.open(name(), graph);
        }
    }

    /** A provider's devices, or why it shows none (empty if it shows some). */
    public record Listing(String provider, List<DeviceInfo> devices, String whyNone) {}

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

    /** What {@code provider} lists; a provider that is not installed or cannot look lists nothing and says why. */
    public static Listing listing(String provider) {
        return chooser().list(provider);
    }

    /**
     * The device to open for {@code provider} (one of {@link #PROVIDER_CHOICES}; null: the configured one, see
     * {@link #configuredProvider()}) and {@code device} (null: the provider's default; with {@code auto}, whichever
     * provider has it), and why — decided before anything is opened, so a caller can say what it chose.
     *
     * @throws IllegalArgumentException if the choice names no provider choice or no device there is
     */
    public static Choice choose(String provider, String device) {
        return chooser().choose(provider, device);
    }

    private static DeviceChooser chooser() {
        Map<String, Supplier<List<DeviceInfo>>> listers = new HashMap<>();
        installed().forEach((name, p) -> listers.put(name, p::devices));
        return new DeviceChooser(listers);
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

    /**
     * Opens the configured device ({@link #choose choose(null, null)}) in {@code graph}, and logs which and why.
     *
     * @throws IllegalArgumentException if the configuration names no provider choice, or {@code ibv} with no device
     */
    public static DeviceContext openDefault(ResourceGraph graph) {
        Choice choice = choose(null, null);
        LOG.log(Level.INFO, "using " + choice.name() + " (" + choice.why() + ")");
        return choice.open(graph);
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
        Choice named = chooser().named(name);
        return open(provider(named.provider()), name, graph);
    }

    private static DeviceContext open(VerbsProvider provider, String device, ResourceGraph graph) {
        requireNativeAccess();
        var events = new AsyncEvents(provider.name() + ":" + device);
        ContextOps ops = provider.open(device, events);
        var resource = graph.create("context", provider.name() + ":" + device, ops::close);
        return new DeviceContext(ops, resource, events);
    }
}
