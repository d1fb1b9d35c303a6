package io.mooring.verbs;

import io.mooring.verbs.values.DeviceInfo;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The one rule by which a device is chosen ({@link RdmaDevices#choose}): {@code auto} takes the first {@code ibv}
 * device if ibv lists one, else {@code soft0}. It decides before opening anything, so a caller can say what it chose
 * and why; it looks at the providers through their listers, so a test can stand one in.
 */
final class DeviceChooser {
    /** Each provider's device lister, by provider name (a lister throws {@link VerbsException} if it cannot look). */
    private final Map<String, Supplier<List<DeviceInfo>>> providers;

    DeviceChooser(Map<String, Supplier<List<DeviceInfo>>> providers) {
        this.providers = Map.copyOf(providers);
    }

    /** The provider names, sorted. */
    List<String> providers() {
        return providers.keySet().stream().sorted().toList();
    }

    /** What {@code provider} lists; a provider that is missing or cannot look lists nothing and says why. */
    RdmaDevices.Listing list(String provider) {
        Supplier<List<DeviceInfo>> p = providers.get(provider);
        if (p == null) {
            return new RdmaDevices.Listing(provider, List.of(), "the " + provider + " provider is not installed in"
                    + " this build; installed: " + String.join(", ", providers()));
        }
        try {
            List<DeviceInfo> devices = p.get();
            return new RdmaDevices.Listing(provider, devices, devices.isEmpty() ? provider + " found no RDMA device"
                    : "");
        } catch (VerbsException e) {
            return new RdmaDevices.Listing(provider, List.of(), e.getMessage());
        }
    }

    /** See {@link RdmaDevices#choose}. */
    RdmaDevices.Choice choose(String provider, String device) {
        String p = provider != null ? provider : RdmaDevices.configuredProvider();
        String source = provider != null ? "provider " + p : RdmaDevices.PROVIDER_PROPERTY + "=" + p;
        return switch (p) {
            case "soft" -> new RdmaDevices.Choice("soft", device != null ? device : "soft0", source);
            case "ibv" -> {
                if (device != null && providers.containsKey("ibv")) yield new RdmaDevices.Choice("ibv", device, source);
                RdmaDevices.Listing ibv = list("ibv");
                if (ibv.devices().isEmpty()) {
                    throw new IllegalArgumentException(source + ", but ibv shows no devices: " + ibv.whyNone()
                            + "; choose provider soft");
                }
                yield new RdmaDevices.Choice("ibv", ibv.devices().getFirst().name(), source + ": its first device");
            }
            case "auto" -> {
                if (device != null) yield named(device);
                RdmaDevices.Listing ibv = list("ibv");
                if (ibv.devices().isEmpty()) {
                    yield new RdmaDevices.Choice("soft", "soft0", source + ": " + ibv.whyNone());
                }
                yield new RdmaDevices.Choice("ibv", ibv.devices().getFirst().name(), source + ": the first ibv device");
            }
            default -> throw new IllegalArgumentException(source + " names no provider choice; use "
                    + String.join(", ", RdmaDevices.PROVIDER_CHOICES));
        };
    }

    /**
     * The device called {@code device} in whichever provider has it, {@code soft} first: it is looked at without
     * loading any native library.
     */
    RdmaDevices.Choice named(String device) {
        List<String> order = new ArrayList<>(providers());
        order.sort(Comparator.comparing((String p) -> !p.equals("soft")));
        for (String p : order) {
            for (DeviceInfo d : list(p).devices()) {
                if (d.name().equals(device)) {
                    return new RdmaDevices.Choice(p, device, "device " + device + " of provider " + p);
                }
            }
        }
        throw new IllegalArgumentException("no RDMA device named '" + device + "'; devices: " + RdmaDevices.list());
    }
}
