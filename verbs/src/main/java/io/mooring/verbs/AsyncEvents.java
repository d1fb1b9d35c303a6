package io.mooring.verbs;

import io.mooring.verbs.spi.AsyncEventSink;
import io.mooring.verbs.spi.CqOps;
import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * A device context's async events as the public layer receives them from either provider: what must happen at once
 * happens on the provider's thread (an overrun CQ refuses posts from then on), then the event is handed to the
 * application's listener ({@link DeviceContext#onAsyncEvent}) on a virtual thread, one event at a time in the order
 * the device raised them, so the listener never runs inside the provider (it may destroy the objects named).
 */
final class AsyncEvents implements AsyncEventSink {
    private static final System.Logger LOG = System.getLogger(AsyncEvents.class.getName());

    private final String context;
    /** The context's CQs by their provider object, which a CQ event names. */
    private final Map<CqOps, CompletionRouter> cqs = new ConcurrentHashMap<>();
    private final Queue<AsyncEvent> pending = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean delivering = new AtomicBoolean();
    private volatile Consumer<AsyncEvent> listener;

    AsyncEvents(String context) {
        this.context = context;
    }

    void listen(Consumer<AsyncEvent> l) {
        listener = l;
    }

    void created(CompletionRouter cq) {
        cqs.put(cq.ops, cq);
    }

    void destroyed(CqOps cq) {
        cqs.remove(cq);
    }

    @Override
    public void event(int code, CqOps cq, int number) {
        AsyncEvent.Type type = AsyncEvent.Type.of(code);
        if (type == null) {
            LOG.log(Level.DEBUG, "async event " + code + " on " + context + " is not known; ignored");
            return;
        }
        String element;
        if (type == AsyncEvent.Type.CQ_ERR) {
            CompletionRouter router = cq == null ? null : cqs.get(cq);
            if (router == null) return; // destroyed meanwhile: nobody can use it any more
            router.overran();
            element = router.name;
        } else if (type.isQpEvent()) {
            element = "qpn " + number;
        } else if (type.isPortEvent()) {
            element = "port " + number;
        } else {
            element = context;
        }
        pending.add(new AsyncEvent(type, element));
        if (delivering.compareAndSet(false, true)) Thread.ofVirtual().name("mooring-async-" + context).start(this::deliver);
    }

    /** Hands the pending events to the listener until none is left; one deliverer at a time keeps their order. */
    private void deliver() {
        do {
            for (AsyncEvent e; (e = pending.poll()) != null; ) {
                Consumer<AsyncEvent> l = listener;
                if (l == null) continue;
                try {
                    l.accept(e);
                } catch (RuntimeException ex) {
                    LOG.log(Level.WARNING, "async event listener of " + context + " threw on " + e + "; ignored", ex);
                }
            }
            delivering.set(false);
        } while (!pending.isEmpty() && delivering.compareAndSet(false, true));
    }
}
