package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.verbs.PeerLog;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Feeds the owner's agent, over a live session, random frames and mutated valid ones from a raw peer (a bare QP
 * that does the bootstrap itself and SENDs whatever bytes it likes). The test decodes each frame with
 * {@link MessageCodec} to know what the agent must do: a malformed frame gets ERROR(MALFORMED) with the request
 * id that could be read, and the 17th in a session ends the session with a logged reason; a REQUEST gets GRANT
 * or a clear ERROR; RENEW and RELEASE get their answer or ERROR; a CREDIT (for messages the owner never sent) ends the
 * session; anything else gets no answer at all; a SEND larger than the receive buffers breaks the QP, which ends the
 * session. After every lost session the owner must
 * have revoked every lease of it; at the end every lease must have ended once, the owner's arena must hold no
 * block, and the agent must never have failed on an input.
 *
 * <p>{@code -Dmooring.lease.fuzz=100000} runs the long profile (10^5 inputs, a few minutes); the normal suite
 * runs a quick subset.
 */
class AgentFuzzTest {
    private static final java.util.regex.Pattern LEFT_OUT =
            java.util.regex.Pattern.compile("\\((\\d+) lines like it left out\\)");
    private static final int INPUTS = Integer.getInteger("mooring.lease.fuzz", 1_000);
    private static final Set<Access> ALL = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC);
    private static final LeaseLimits LIMITS = LeaseLimits.builder().maxBytes(1 << 20).maxLeases(32)
            .maxDuration(Duration.ofSeconds(60)).maxLifetime(Duration.ofMinutes(10))
            .maxAccess(ALL).grace(Duration.ofMillis(10)).build();

    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());

    @Test
    void randomAndMutatedControlMessagesGetClearAnswersAndLeakNothing() throws Exception {
        ResourceGraph graph = ResourceGraph.builder().name("agent-fuzz").build();
        ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ProtectionDomain peerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        // No thread caches: the agent threads that allocate die with their sessions (see LeaseProperties).
        RdmaArena arena = RdmaArena.builder(ownerPd).chunkSize(1 << 20).shards(1).threadCache(0)
                .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
        var random = new SplittableRandom(20261122);
        Map<String, Integer> seen = new TreeMap<>();
        List<LeaseManager> managers = new ArrayList<>();
        List<Long> granted = new ArrayList<>();
        int drops = 0;
        int input = 0;
        RdmaEndpoint endpoint = RdmaEndpoint.builder(ownerPd, arena).limits(LIMITS).isolation(Isolation.WINDOW)
                .failureBackoff(Duration.ZERO).build(); // the fuzzer reconnects at once after each drop
        RdmaListener listener = endpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        while (input < INPUTS) {
            int malformed = 0;
            granted.clear();
            {
                var accepted = listener.acceptAsync();
                try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
                    RdmaSession owner = accepted.get(30, TimeUnit.SECONDS);
                    managers.add(owner.leases());
                    boolean lost = false;
                    while (input < INPUTS && !lost) {
                        input++;
                        byte[] frame = frame(random, granted);
                        Message decoded = null;
                        MalformedMessageException fault = null;
                        try {
                            decoded = MessageCodec.decode(MemorySegment.ofArray(frame));
                        } catch (MalformedMessageException e) {
                            fault = e;
                        }
                        String at = "input " + input + " (" + (decoded != null ? decoded : fault.getMessage()) + ")";
                        boolean oversized = frame.length > MessageCodec.MAX_MESSAGE;
                        boolean last = fault != null && ++malformed > ControlInbox.MALFORMED_LIMIT;
                        // The owner sends the raw peer no messages, so any credit returned is for nothing it sent.
                        boolean credit = decoded instanceof Message.Credit;
                        peer.send(frame);
                        if (oversized || last || credit) {
                            seen.merge(oversized ? "dropped: oversized SEND" : last ? "dropped: too many malformed"
                                    : "dropped: credit for messages never sent", 1, Integer::sum);
                            awaitTrue(() -> owner.lostReason() != null, "the session to end after " + at);
                            awaitTrue(() -> owner.leases().stats().active() == 0, "every lease revoked after " + at);
                            lost = true;
                            drops++;
                        } else if (fault != null) {
                            Message.Error e = assertInstanceOfError(peer.nextAnswer(at), at);
                            assertEquals(ErrorCodes.MALFORMED, e.code(), at);
                            assertEquals(fault.requestId(), e.requestId(), at);
                            seen.merge("ERROR(MALFORMED)", 1, Integer::sum);
                        } else if (decoded instanceof Message.Request || decoded instanceof Message.Renew
                                || decoded instanceof Message.Release) {
                            Message answer = peer.nextAnswer(at);
                            assertEquals(decoded.requestId(), answer.requestId(), at + " answered " + answer);
                            String kind = answered(decoded, answer, at, granted);
                            seen.merge(kind, 1, Integer::sum);
                        } else {
                            seen.merge("no answer to " + decoded.getClass().getSimpleName(), 1, Integer::sum);
                        }
                    }
                    owner.close();
                    assertEquals(0, owner.leases().stats().active(), "leases left after the session closed");
                }
            }
        }
        long grants = 0, ends = 0;
        for (LeaseManager m : managers) {
            LeaseStats s = m.stats();
            grants += s.granted();
            ends += s.released() + s.expired() + s.revoked();
        }
        assertEquals(grants, ends, "every granted lease ended exactly once");
        listener.close();
        endpoint.close();
        assertEquals(0, arena.stats().liveBlocks(), "a leased block or control buffer was never given back");
        arena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        for (CapturedLog.Entry r : log.entries()) {
            if (r.message().startsWith("serving ") || r.level().compareTo(System.Logger.Level.WARNING) > 0) {
                throw new AssertionError("the agent failed on an input: " + r.message(), r.thrown());
            }
        }
        // Lines a peer triggers are rate-limited (PeerLog): a reason is logged, or counted in the next line let through.
        // A line past the rate window lets through what the last burst left out, whenever the run's lines ended.
        Thread.sleep(1_100);
        PeerLog.log(System.getLogger(RdmaSession.class.getName()), System.Logger.Level.WARNING, "end of the fuzz run");
        long droppedWithReason = log.entries().stream().filter(r -> r.message().contains("lost: ")).count()
                + log.entries().stream().map(r -> LEFT_OUT.matcher(r.message())).filter(java.util.regex.Matcher::find)
                        .mapToLong(m -> Long.parseLong(m.group(1))).sum();
        assertTrue(droppedWithReason >= drops, drops + " sessions dropped, only " + droppedWithReason + " reasons logged");
        if (Boolean.getBoolean("mooring.lease.verbose")) System.out.println(INPUTS + " inputs, " + drops + " sessions dropped: " + seen);
        assertTrue(grants > 0 && drops > 0 && seen.getOrDefault("ERROR(MALFORMED)", 0) > 0, "the inputs reached "
                + "too little of the agent: " + seen);
    }

    /** Checks the answer to a well-formed REQUEST, RENEW or RELEASE; returns its kind for the tally. */
    private static String answered(Message decoded, Message answer, String at, List<Long> granted) {
        return switch (answer) {
            case Message.Grant g when decoded instanceof Message.Request r -> {
                assertTrue(g.length() == r.size() && g.durationNanos() == r.durationNanos(), at + " " + g);
                granted.add(g.leaseId());
                yield "GRANT";
            }
            case Message.Renewed x when decoded instanceof Message.Renew -> "RENEWED";
            case Message.ReleaseAck x when decoded instanceof Message.Release -> "RELEASE_ACK";
            case Message.Error e -> {
                assertTrue(e.code() != ErrorCodes.MALFORMED && !e.message().isBlank(), at + " " + e);
                yield "ERROR(" + e.code() + ") to " + decoded.getClass().getSimpleName();
            }
            default -> throw new AssertionError(at + " was answered with " + answer);
        };
    }

    private static Message.Error assertInstanceOfError(Message m, String at) {
        if (m instanceof Message.Error e) return e;
        throw new AssertionError(at + " was answered with " + m + ", not ERROR");
    }

    // ---- inputs ------------------------------------------------------------------------------------------------

    /** A random frame: mostly a valid message (about half of them mutated), sometimes plain random bytes. */
    private static byte[] frame(SplittableRandom r, List<Long> granted) {
        int kind = r.nextInt(100);
        if (kind < 6) {
            byte[] b = new byte[kind == 0 ? 257 + r.nextInt(44) : 1 + r.nextInt(MessageCodec.MAX_MESSAGE)];
            r.nextBytes(b);
            return b;
        }
        MemorySegment out = MemorySegment.ofArray(new byte[MessageCodec.MAX_MESSAGE]);
        int n = MessageCodec.encode(message(r, granted), out);
        byte[] b = out.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
        if (r.nextBoolean()) return b;
        for (int k = 1 + r.nextInt(3); k > 0; k--) {
            switch (r.nextInt(6)) {
                case 0 -> b[r.nextInt(b.length)] = (byte) r.nextInt();
                case 1 -> b[r.nextInt(b.length)] ^= (byte) (1 << r.nextInt(8));
                case 2 -> b = java.util.Arrays.copyOf(b, 1 + r.nextInt(b.length));
                case 3 -> {
                    int more = r.nextInt(MessageCodec.MAX_MESSAGE - b.length + 1);
                    byte[] longer = java.util.Arrays.copyOf(b, b.length + more);
                    for (int i = b.length; i < longer.length; i++) longer[i] = (byte) r.nextInt();
                    b = longer;
                }
                case 4 -> { if (b.length >= 8) b[7] = (byte) r.nextInt(10); } // another type, same body
                default -> { if (b.length >= 12) b[11] = (byte) (b[11] + r.nextInt(-8, 9)); } // length field
            }
        }
        return b;
    }

    private static Message message(SplittableRandom r, List<Long> granted) {
        long id = r.nextLong();
        long lease = !granted.isEmpty() && r.nextInt(3) > 0 ? granted.get(r.nextInt(granted.size())) : 1 + r.nextInt(1000);
        long duration = switch (r.nextInt(4)) {
            case 0 -> 1 + r.nextLong(1_000_000); // under a millisecond: expires at once
            case 1 -> Long.MAX_VALUE - r.nextInt(1000);
            default -> 1_000_000L * (1 + r.nextInt(30_000));
        };
        return switch (r.nextInt(10)) {
            case 0, 1, 2 -> new Message.Request(id, r.nextInt(8) == 0 ? 1L << r.nextInt(20, 63) : 1 + r.nextInt(8192),
                    1L << r.nextInt(r.nextInt(8) == 0 ? 62 : 13), 2 * (1 + r.nextInt(7)), duration);
            case 3, 4 -> new Message.Release(id, lease);
            case 5 -> new Message.Renew(id, lease, duration);
            case 6 -> new Message.Grant(id, lease, r.nextLong(), 1 + r.nextInt(4096), r.nextInt(), duration);
            case 7 -> r.nextBoolean() ? new Message.Revoke(id, lease, r.nextInt(5))
                    : new Message.Offer(id, lease, r.nextLong(), 1 + r.nextInt(4096), r.nextInt(), 2 * (1 + r.nextInt(7)), duration,
                            r.nextLong());
            case 8 -> r.nextBoolean() ? new Message.Error(id, r.nextInt(10), "e".repeat(r.nextInt(250)))
                    : new Message.Credit(id, 1 + r.nextInt(64));
            default -> r.nextBoolean() ? new Message.Renewed(id, lease, duration) : new Message.ReleaseAck(id, lease);
        };
    }

    private static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("waited 15 s for " + what);
            Thread.sleep(1);
        }
    }
}
