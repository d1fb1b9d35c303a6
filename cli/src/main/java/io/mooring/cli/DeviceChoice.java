package io.mooring.cli;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.values.DeviceInfo;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Which device a command uses: {@code --provider} and {@code --device}, else {@value RdmaDevices#PROVIDER_PROPERTY}.
 * {@code auto} follows {@link RdmaDevices#openDefault()}'s rule — the first {@code ibv} device if ibv lists one,
 * else {@code soft0} — but decides before opening anything, so that the command can print what it chose and why.
 */
final class DeviceChoice {
    static final List<String> PROVIDERS = List.of("soft", "ibv", "auto");

    /** A provider's devices, or why it shows none. */
    record Listing(String provider, List<DeviceInfo> devices, String whyNone) {}

    /** The device to open ({@code provider:device}) and why it was chosen. */
    record Choice(String provider, String device, String why) {
        String name() {
            return provider + ":" + device;
        }

        DeviceContext open(ResourceGraph graph) {
            return RdmaDevices.open(name(), graph);
        }
    }

    /** Each provider's device lister, by provider name (a lister throws {@link VerbsException} if it cannot look). */
    private final Map<String, Supplier<List<DeviceInfo>>> providers;

    DeviceChoice(Map<String, Supplier<List<DeviceInfo>>> providers) {
        this.providers = Map.copyOf(providers);
    }

    /** The choice among the installed providers. */
    static DeviceChoice installed() {
        var listers = new HashMap<String, Supplier<List<DeviceInfo>>>();
        for (String p : RdmaDevices.providers()) listers.put(p, () -> RdmaDevices.devices(p));
        return new DeviceChoice(listers);
    }

    /** The provider names, sorted. */
    List<String> providers() {
        return providers.keySet().stream().sorted().toList();
    }

    /** What {@code provider} lists; a provider that is missing or cannot look lists nothing and says why. */
    Listing list(String provider) {
        Supplier<List<DeviceInfo>> p = providers.get(provider);
        if (p == null) {
            return new Listing(provider, List.of(), "the " + provider + " provider is not installed in this build;"
                    + " installed: " + String.join(", ", providers()));
        }
        try {
            List<DeviceInfo> devices = p.get();
            return new Listing(provider, devices, devices.isEmpty() ? provider + " found no RDMA device" : "");
        } catch (VerbsException e) {
            return new Listing(provider, List.of(), e.getMessage());
        }
    }

    /** What {@code mooring.provider=auto} takes, and why. */
    Choice auto() {
        Listing ibv = list("ibv");
        if (!ibv.devices().isEmpty()) {
            return new Choice("ibv", ibv.devices().getFirst().name(), "the first ibv device");
        }
        return new Choice("soft", "soft0", ibv.whyNone());
    }

    /**
     * The device for {@code --provider} (null: the configured choice) and {@code --device} (null: the provider's
     * default).
     *
     * @throws IllegalArgumentException if the choice names no device there is
     */
    Choice choose(String provider, String device) {
        String p = provider != null ? provider : RdmaDevices.configuredProvider();
        String source = provider != null ? "--provider " + p : RdmaDevices.PROVIDER_PROPERTY + "=" + p;
        return switch (p) {
            case "soft" -> new Choice("soft", device != null ? device : "soft0", source);
            case "ibv" -> {
                if (device != null && providers.containsKey("ibv")) yield new Choice("ibv", device, source);
                Listing ibv = list("ibv");
                if (ibv.devices().isEmpty()) {
                    throw new IllegalArgumentException(source + ", but ibv shows no devices: " + ibv.whyNone()
                            + "; use --provider soft");
                }
                yield new Choice("ibv", ibv.devices().getFirst().name(), source + ": its first device");
            }
            case "auto" -> {
                if (device != null) yield named(device);
                Choice auto = auto();
                yield new Choice(auto.provider(), auto.device(), source + ": " + auto.why());
            }
            default -> throw new IllegalArgumentException(source + " names no provider choice; use "
                    + String.join(", ", PROVIDERS));
        };
    }

    /** The device called {@code device} in whichever provider has it. */
    private Choice named(String device) {
        for (String p : providers()) {
            for (DeviceInfo d : list(p).devices()) {
                if (d.name().equals(device)) return new Choice(p, device, "--device " + device + " of provider " + p);
            }
        }
        throw new IllegalArgumentException("no RDMA device named '" + device + "'; use mooring devices to list them");
    }
}
