package io.mooring.benchmarks;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link NettyTransport}'s states and benchmarks driven as JMH drives them (setup, a few operations on a
 * {@code FastThreadLocalThread}, teardown, which checks that every block came back and the graph is empty), measuring
 * nothing: so a broken setup or a stall shows up in the normal test run.
 */
@Timeout(120)
class NettyTransportTest {
    private final NettyTransport benchmark = new NettyTransport();

    @Test
    void roundTripsEchoOverRawSessionsAndOverTheNettyTransport() throws Exception {
        MemoryOverhead.onFastThread(() -> {
            for (int size : new int[] {64, 4096}) {
                var raw = new NettyTransport.RawEcho();
                raw.size = size;
                raw.open();
                run(raw, () -> benchmark.rawRoundTrip(raw), 50);
                raw.close();
                var netty = new NettyTransport.NettyEcho();
                netty.size = size;
                netty.open();
                run(netty, () -> benchmark.nettyRoundTrip(netty), 50);
                netty.close();
            }
            return null;
        });
    }

    @Test
    void streamsDeliverEveryMessageOverRawSessionsAndOverTheNettyTransport() throws Exception {
        MemoryOverhead.onFastThread(() -> {
            var raw = new NettyTransport.RawStreams();
            raw.open();
            run(raw, () -> benchmark.rawStreams(raw), 2);
            raw.close();
            for (String buffers : new String[] {"mooring", "nettyPooled"}) {
                var netty = new NettyTransport.NettyStreams();
                netty.buffers = buffers;
                netty.open();
                run(netty, () -> benchmark.nettyStreams(netty), 2);
                netty.close();
            }
            return null;
        });
    }

    /** One iteration of {@code invocations}, with the iteration's setup and teardown. */
    private static void run(TransportSides state, Runnable invocation, int invocations) {
        state.startCounting();
        for (int i = 0; i < invocations; i++) invocation.run();
        state.report();
    }
}
