package io.mooring.examples.pagestore;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A remote page store on Mooring's public API, the load a storage engine puts on a session layer: {@link PageServer}
 * holds {@link Pages#COUNT} pages of {@link Pages#BYTES} in its arena; {@link PageClient}'s tasks READ pages through
 * one read-only offer of the whole table and write them by request/reply, many at once over a few sessions.
 * <pre>
 *   PageStore server PORT SESSIONS [DEVICE]                       serves SESSIONS sessions, then ends
 *   PageStore client HOST:PORT SESSIONS TASKS OPS [DEVICE]         runs OPS/10 untimed then OPS timed, 10% writes
 * </pre>
 * DEVICE defaults to {@code soft:soft0}.
 */
public final class PageStore {
    private PageStore() {}

    /** Server and client in this process, each on an endpoint of its own on {@code device}. */
    public static List<String> inProcess(String device, int sessions, int tasks, int warmup, int ops,
                                         int writePercent) throws Exception {
        var serving = new CompletableFuture<Integer>();
        var server = CompletableFuture.runAsync(() -> {
            try (var memory = Pages.Memory.open(device);
                 var endpoint = PageServer.endpoint(memory);
                 var listener = endpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                 var store = new PageServer(endpoint)) {
                serving.complete(listener.address().getPort());
                store.serve(listener, sessions);
            } catch (Exception e) {
                serving.completeExceptionally(e);
                throw new IllegalStateException("the page server failed: " + e, e);
            }
        });
        var address = new InetSocketAddress(InetAddress.getLoopbackAddress(), serving.get(30, TimeUnit.SECONDS));
        List<String> lines = new ArrayList<>(PageClient.run(device, address, sessions, tasks, warmup, ops, writePercent));
        server.get(30, TimeUnit.SECONDS);
        return lines;
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("server")) {
            PageServer.run(args.length > 3 ? args[3] : "soft:soft0", Integer.parseInt(args[1]),
                    Integer.parseInt(args[2]));
        } else if (args.length >= 5 && args[0].equals("client")) {
            int colon = args[1].lastIndexOf(':');
            var server = new InetSocketAddress(args[1].substring(0, colon), Integer.parseInt(args[1].substring(colon + 1)));
            int ops = Integer.parseInt(args[4]);
            PageClient.run(args.length > 5 ? args[5] : "soft:soft0", server, Integer.parseInt(args[2]),
                    Integer.parseInt(args[3]), ops / 10, ops, 10).forEach(System.out::println);
        } else {
            System.err.println("usage: PageStore server PORT SESSIONS [DEVICE]"
                    + " | PageStore client HOST:PORT SESSIONS TASKS OPS [DEVICE]");
            System.exit(2);
        }
    }
}
