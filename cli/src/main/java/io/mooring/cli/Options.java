package io.mooring.cli;

import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A command's options, parsed strictly: every option takes a value ({@code --name VALUE} or
 * {@code --name=VALUE}); an unknown, repeated or valueless option, or a stray argument, is a
 * {@link UsageException} naming it, and so is a value the command cannot use.
 */
final class Options {
    private final Map<String, String> values;

    private Options(Map<String, String> values) {
        this.values = values;
    }

    /** Parses {@code args} against the option names {@code known} (without the leading dashes). */
    static Options parse(String[] args, Set<String> known) throws UsageException {
        Map<String, String> values = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) throw new UsageException("unexpected argument '" + arg + "'");
            int eq = arg.indexOf('=');
            String name = arg.substring(2, eq < 0 ? arg.length() : eq);
            if (!known.contains(name)) throw new UsageException("unknown option '--" + name + "'");
            String value;
            if (eq >= 0) {
                value = arg.substring(eq + 1);
            } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                value = args[++i];
            } else {
                throw new UsageException("--" + name + " needs a value");
            }
            if (values.putIfAbsent(name, value) != null) throw new UsageException("--" + name + " is given twice");
        }
        return new Options(values);
    }

    boolean has(String name) {
        return values.containsKey(name);
    }

    /** The value, or {@code fallback} (may be null) if the option is absent. */
    String text(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    /** A whole number in [min, max]. */
    int number(String name, int fallback, int min, int max) throws UsageException {
        String v = values.get(name);
        if (v == null) return fallback;
        try {
            int n = Integer.parseInt(v.trim());
            if (n >= min && n <= max) return n;
        } catch (NumberFormatException e) {
            // reported below, with the range
        }
        throw new UsageException("--" + name + " must be a whole number from " + min + " to " + max + ", not '" + v + "'");
    }

    /** {@code HOST:PORT} (an IPv6 host in brackets), unresolved; null if the option is absent. */
    InetSocketAddress address(String name) throws UsageException {
        String v = values.get(name);
        if (v == null) return null;
        int colon = v.lastIndexOf(':');
        String host = colon < 0 ? "" : v.substring(0, colon).replaceAll("^\\[(.*)]$", "$1");
        if (host.isEmpty()) throw new UsageException("--" + name + " needs HOST:PORT, not '" + v + "'");
        try {
            int port = Integer.parseInt(v.substring(colon + 1));
            if (port >= 1 && port <= 65535) return InetSocketAddress.createUnresolved(host, port);
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new UsageException("--" + name + " needs a port from 1 to 65535, not '" + v.substring(colon + 1) + "'");
    }

    /** One of {@code allowed}. */
    String choice(String name, String fallback, List<String> allowed) throws UsageException {
        String v = values.get(name);
        if (v == null || allowed.contains(v)) return v == null ? fallback : v;
        throw new UsageException("--" + name + " must be one of " + String.join(", ", allowed) + ", not '" + v + "'");
    }
}
