package io.mooring.verbs.ibv;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The downcalls as typed calls: one {@code invokeExact} per Java signature of the handles in {@link Ibv}, its
 * {@code Throwable} narrowed to what a downcall can throw. A caller passes a handle and the arguments it takes (the
 * errno capture segment or the function pointer first, as the handle was bound); these bodies are tiny, so once
 * inlined the handle is a constant again and the JIT inlines the downcall itself. {@code invokeExact} is
 * signature-polymorphic: one body per signature is as few as the types allow.
 */
final class IbvCalls {
    private IbvCalls() {}

    /** {@code int f(void *)} with errno captured ({@code ibv_destroy_qp} and the other destroys). */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b) {
        try {
            return (int) h.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code int f(void *, void *)} with errno captured, or {@code int (*f)(void *)} through a pointer, errno too. */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c) {
        try {
            return (int) h.invokeExact(a, b, c);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code int f(void *, void *, int)} with errno captured ({@code ibv_modify_qp}, {@code ibv_modify_srq}). */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c, int d) {
        try {
            return (int) h.invokeExact(a, b, c, d);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_query_qp}. */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c, int d, MemorySegment e) {
        try {
            return (int) h.invokeExact(a, b, c, d, e);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code int f(void *, void *, void *)} with errno captured, or through a pointer without (posts, {@code bind_mw}). */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c, MemorySegment d) {
        try {
            return (int) h.invokeExact(a, b, c, d);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code poll_cq} through its pointer. */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, int c, MemorySegment d) {
        try {
            return (int) h.invokeExact(a, b, c, d);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code req_notify_cq} through its pointer. */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, int c) {
        try {
            return (int) h.invokeExact(a, b, c);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** the exported compat {@code ibv_query_port}. */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, byte c, MemorySegment d) {
        try {
            return (int) h.invokeExact(a, b, c, d);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code query_port} through its pointer. */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c, byte d, MemorySegment e,
                       long f) {
        try {
            return (int) h.invokeExact(a, b, c, d, e, f);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_query_gid}. */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, byte c, int d, MemorySegment e) {
        try {
            return (int) h.invokeExact(a, b, c, d, e);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code fcntl(F_GETFL)}, {@code eventfd}. */
    static int callInt(MethodHandle h, MemorySegment a, int b, int c) {
        try {
            return (int) h.invokeExact(a, b, c);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code fcntl(F_SETFL)}. */
    static int callInt(MethodHandle h, MemorySegment a, int b, int c, int d) {
        try {
            return (int) h.invokeExact(a, b, c, d);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code poll}. */
    static int callInt(MethodHandle h, MemorySegment a, MemorySegment b, long c, int d) {
        try {
            return (int) h.invokeExact(a, b, c, d);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code close}. */
    static int callInt(MethodHandle h, MemorySegment a, int b) {
        try {
            return (int) h.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code write}. */
    static long callLong(MethodHandle h, MemorySegment a, int b, MemorySegment c, long d) {
        try {
            return (long) h.invokeExact(a, b, c, d);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code const char *ibv_get_device_name(void *)}. */
    static MemorySegment callAddress(MethodHandle h, MemorySegment a) {
        try {
            return (MemorySegment) h.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code void *f(void *)} with errno captured ({@code ibv_alloc_pd} and friends). */
    static MemorySegment callAddress(MethodHandle h, MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) h.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code void *f(void *, void *)} with errno captured ({@code ibv_create_qp}, {@code ibv_create_srq}). */
    static MemorySegment callAddress(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c) {
        try {
            return (MemorySegment) h.invokeExact(a, b, c);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code alloc_mw} through its pointer. */
    static MemorySegment callAddress(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c, int d) {
        try {
            return (MemorySegment) h.invokeExact(a, b, c, d);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_reg_mr}. */
    static MemorySegment callAddress(MethodHandle h, MemorySegment a, MemorySegment b, MemorySegment c, long d, int e) {
        try {
            return (MemorySegment) h.invokeExact(a, b, c, d, e);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_create_cq}. */
    static MemorySegment callAddress(MethodHandle h, MemorySegment a, MemorySegment b, int c, MemorySegment d,
                                     MemorySegment e, int f) {
        try {
            return (MemorySegment) h.invokeExact(a, b, c, d, e, f);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code void f(void *)} ({@code ibv_free_device_list}, {@code ibv_ack_async_event}). */
    static void callVoid(MethodHandle h, MemorySegment a) {
        try {
            h.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_ack_cq_events}. */
    static void callVoid(MethodHandle h, MemorySegment a, int b) {
        try {
            h.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Downcalls declare Throwable; only RuntimeException and Error can come out of them. */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException("unexpected checked exception from a downcall", t);
    }
}
