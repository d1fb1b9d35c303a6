package io.mooring.examples.kv;

import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.EnumSet;

/**
 * A remote key-value cache on Mooring's public API: {@link KvServer} keeps values in arena blocks; {@link KvClient}
 * PUTs by request/reply and GETs by one-sided READ of a value the server offered. The protocol, in application
 * messages: a request is a call ({@code RdmaSession.callAsync}) of {@code op:u8 keyLength:u8 key value} (a PUT's value
 * has at least a byte; a GET's is empty or an 8-byte tag), its reply {@code status:u8} (a request sent one-way gets a
 * one-way reply); a GET that finds its key is also answered with an offer of the value, tagged with the GET's tag (so
 * that a client with many GETs in flight knows which offer answers which), sent before the reply. A PUT's reply comes
 * once every lease of the value it replaced has ended: no GET begun after it reads the old value.
 * <pre>
 *   Kv server PORT [DEVICE [SESSIONS]]          serves until SESSIONS clients have left (0: forever)
 *   Kv client HOST:PORT [DEVICE [KEYS [OPS [WARMUP]]]]   PUTs KEYS values, then GETs and PUTs WARMUP times untimed
 *                                                      and OPS times timed, and prints latencies
 * </pre>
 * DEVICE defaults to {@code soft:soft0}.
 */
public final class Kv {
    static final byte PUT = 1;
    static final byte GET = 2;
    static final byte OK = 0;
    static final byte MISSING = 1;
    /** The server leases this host no more values now (a per-peer limit): give some back and ask again. */
    static final byte BUSY = 2;
    /** A malformed request: too short, a key past its end, an unknown op, a PUT without a value or a GET with one. */
    static final byte INVALID = 3;
    /** A GET's tag, after its key (unaligned). */
    static final ValueLayout.OfLong TAG = ValueLayout.JAVA_LONG_UNALIGNED;

    private Kv() {}

    /** A device, its protection domain and an arena whose blocks a peer may reach through windows. */
    record Memory(DeviceContext device, ProtectionDomain pd, RdmaArena arena) implements AutoCloseable {
        @Override
        public void close() {
            arena.close();
            pd.close();
            device.close();
        }
    }

    static Memory open(String device) {
        DeviceContext context = RdmaDevices.open(device);
        ProtectionDomain pd = context.allocateProtectionDomain();
        return new Memory(context, pd, RdmaArena.builder(pd)
                .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build());
    }

    /** The endpoint's own default, for this program's sessions. */
    private static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);

    public static void main(String[] args) throws Exception {
        String device = args.length > 2 ? args[2] : "soft:soft0";
        if (args.length >= 2 && args[0].equals("server")) {
            KvServer.run(device, Integer.parseInt(args[1]), args.length > 3 ? Integer.parseInt(args[3]) : 0,
                    HANDSHAKE_TIMEOUT);
        } else if (args.length >= 2 && args[0].equals("client")) {
            int keys = args.length > 3 ? Integer.parseInt(args[3]) : 64;
            KvClient.run(device, args[1], keys, args.length > 5 ? Integer.parseInt(args[5]) : 0,
                            args.length > 4 ? Integer.parseInt(args[4]) : 20_000, 1, HANDSHAKE_TIMEOUT)
                    .forEach(System.out::println);
        } else {
            System.err.println("usage: Kv server PORT [DEVICE [SESSIONS]]"
                    + " | Kv client HOST:PORT [DEVICE [KEYS [OPS [WARMUP]]]]");
            System.exit(2);
        }
    }
}
