package io.mooring.benchmarks;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The C allocators, reached the way an FFM user reaches them: {@code malloc}/{@code free} downcalls held in
 * {@code static final} fields (so the JIT inlines them; in instance fields they cost several times more).
 * Each allocator is a holder class, loaded only when a benchmark first touches it, so a missing jemalloc
 * fails only the jemalloc benchmarks.
 */
final class Malloc {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final FunctionDescriptor MALLOC = FunctionDescriptor.of(ADDRESS, JAVA_LONG);
    private static final FunctionDescriptor FREE = FunctionDescriptor.ofVoid(ADDRESS);

    private Malloc() {}

    /** glibc's allocator, found by the linker's default lookup (the one the JVM itself uses). */
    static final class Libc {
        static final MethodHandle MALLOC = downcall(LINKER.defaultLookup(), "malloc", Malloc.MALLOC);
        static final MethodHandle FREE = downcall(LINKER.defaultLookup(), "free", Malloc.FREE);

        private Libc() {}
    }

    /**
     * jemalloc 5.3 from Debian's {@code libjemalloc2}, opened with {@code dlopen} and its own {@code malloc} and
     * {@code free} looked up in that library (not in the default lookup, which would find glibc's). It is never
     * {@code LD_PRELOAD}ed: that would turn the glibc baseline into jemalloc as well.
     *
     * <p>The library uses initial-exec TLS, which a {@code dlopen}ed library can only get from glibc's reserve of
     * static TLS; the default reserve is too small once the JVM is loaded, so the process must start with
     * {@value #TUNABLES} in {@code GLIBC_TUNABLES} ({@code ./mooring bench} sets it; so does the test run).
     */
    static final class Jemalloc {
        static final String LIBRARY = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
        static final String TUNABLES = "glibc.rtld.optional_static_tls=16384";
        static final SymbolLookup LOOKUP = open();
        static final MethodHandle MALLOC = downcall(LOOKUP, "malloc", Malloc.MALLOC);
        static final MethodHandle FREE = downcall(LOOKUP, "free", Malloc.FREE);
        /** {@code int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)}. */
        static final MethodHandle MALLCTL = downcall(LOOKUP, "mallctl",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));

        private Jemalloc() {}

        @SuppressWarnings("restricted") // loading native code is what this class is for
        private static SymbolLookup open() {
            if (!Files.exists(Path.of(LIBRARY))) {
                throw new IllegalStateException(LIBRARY + " is missing: install Debian's jemalloc "
                        + "(apt-get install -y libjemalloc2)");
            }
            try {
                return SymbolLookup.libraryLookup(Path.of(LIBRARY), Arena.global());
            } catch (IllegalArgumentException e) {
                String tunables = System.getenv("GLIBC_TUNABLES");
                throw new IllegalStateException("cannot dlopen " + LIBRARY + " (" + e.getMessage() + "); jemalloc "
                        + "needs static TLS room: start the JVM with GLIBC_TUNABLES=" + TUNABLES
                        + " in its environment (./mooring bench does); GLIBC_TUNABLES is "
                        + (tunables == null ? "unset" : "'" + tunables + "'"), e);
            }
        }

        /**
         * A {@code uint64_t} or {@code size_t} statistic by name: {@code thread.allocated} (bytes this thread has
         * allocated so far) is always current; the {@code stats.*} totals are as of the last {@link #refresh()}.
         */
        static long statistic(String name) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment value = arena.allocate(JAVA_LONG);
                MemorySegment length = arena.allocate(JAVA_LONG);
                length.set(JAVA_LONG, 0, JAVA_LONG.byteSize());
                int err = (int) MALLCTL.invokeExact(arena.allocateFrom(name), value, length, MemorySegment.NULL, 0L);
                if (err != 0) throw new IllegalStateException("mallctl(\"" + name + "\") failed: error " + err);
                return value.get(JAVA_LONG, 0);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        /** Brings the {@code stats.*} totals up to date (jemalloc caches them until the epoch advances). */
        static void refresh() {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment epoch = arena.allocateFrom(JAVA_LONG, 1);
                int err = (int) MALLCTL.invokeExact(arena.allocateFrom("epoch"), MemorySegment.NULL,
                        MemorySegment.NULL, epoch, JAVA_LONG.byteSize());
                if (err != 0) throw new IllegalStateException("mallctl(\"epoch\") failed: error " + err);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }

    @SuppressWarnings("restricted") // malloc, free and mallctl with their C signatures
    private static MethodHandle downcall(SymbolLookup lookup, String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = lookup.find(name)
                .orElseThrow(() -> new IllegalStateException("symbol " + name + " not found"));
        return LINKER.downcallHandle(symbol, descriptor);
    }
}
