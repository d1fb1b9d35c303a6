package io.mooring.verbs.spi;

/**
 * Receives a device context's asynchronous events ({@code ibv_get_async_event}) from its provider, on a thread of
 * the provider's. It runs no application code, so a provider may call it holding its own locks.
 */
@FunctionalInterface
public interface AsyncEventSink {
    /**
     * @param type   {@code IBV_EVENT_*} type
     * @param cq     the completion queue the event is about ({@code IBV_EVENT_CQ_ERR}); else null
     * @param number the QP number for a QP event, the port for a port event; else 0
     */
    void event(int type, CqOps cq, int number);
}
