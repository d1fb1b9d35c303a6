package io.mooring.properties;

import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.lists;
import static org.quicktheories.generators.SourceDSL.longs;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.ConnectOptions;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.MemoryWindow;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.WcOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.quicktheories.api.Pair;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Random programs against the soft provider's remote access rules: B (the responder) registers and deregisters
 * regions with random rights, allocates type 2 windows, binds, invalidates and deallocates them; A (the
 * requester) runs RDMA WRITE, READ, CMP_AND_SWP and FETCH_AND_ADD through B's keys — current, stale, corrupted,
 * deregistered, of a window, of another protection domain — at offsets inside, across and outside their ranges.
 *
 * <p>A model knows every key B handed out (what it names, its range and rights, whether it still works) and
 * predicts each step's outcome: the completion status (SUCCESS, REM_ACCESS_ERR, REM_INV_REQ_ERR, MW_BIND_ERR),
 * the exception of a refused call, the QP states, and the effect on memory. After every step each region B
 * ever registered (deregistered ones too) and A's buffers must equal the model byte for byte: a forbidden access
 * fails and touches nothing, an allowed one does exactly what the model does. After an error both QPs are reset
 * and reconnected and the program goes on. Failures name the step and list the steps so far, resolved.
 */
class VerbsAccessProperties {
    /** Per transport; each example builds two endpoints and runs up to {@link #MAX_STEPS} steps. */
    private static final int EXAMPLES = 300;
    /** Each shrink cycle reruns a program; one that hangs costs {@link #WAIT}. */
    private static final int SHRINK_CYCLES = 50;
    private static final int MAX_STEPS = 40;
    /** A's source buffer (WRITE payloads) and result buffer (READ data, atomic originals). */
    private static final int LOCAL_SIZE = 4096;
    /**
     * Short ACK timeouts, as in the conformance suite, but more retries: no step here loses an answer, and a
     * loaded host's scheduler must not turn a late one into RETRY_EXC_ERR.
     */
    private static final ConnectOptions OPTIONS = ConnectOptions.builder().ackTimeout(Duration.ofMillis(4))
            .minRnrTimer(Duration.ofNanos(10_000)).build();
    /** A completion takes milliseconds (under 40 ms with the host's load average at 10): a lost one fails soon. */
    private static final Duration WAIT = Duration.ofSeconds(5);

    @Test
    void accessesWithinOneDeviceDoExactlyWhatTheModelAllows() {
        check("soft:soft0", "soft:soft0");
    }

    @Test
    void accessesAcrossTheTcpFabricDoExactlyWhatTheModelAllows() {
        check("soft:soft0", "soft:soft1");
    }

    private static void check(String requester, String responder) {
        qt().withExamples(EXAMPLES).withShrinkCycles(SHRINK_CYCLES)
                .forAll(programs())
                .checkAssert(program -> {
                    try (var run = new Run(requester, responder)) {
                        run.execute(program);
                    }
                });
    }

    // ---- the programs ------------------------------------------------------------------------------------------

    /** One step. Indices pick among what exists when it runs (modulo), so every program can run. */
    sealed interface Op permits Register, Deregister, AllocateWindow, Bind, Invalidate, DeallocateWindow, Remote {}

    /** Registers {@code size} bytes on B, filled from {@code seed}, with {@code rights} (maybe inconsistent ones). */
    record Register(int size, Set<Access> rights, int seed) implements Op {}

    /** Closes one of B's open regions. */
    record Deregister(int region) implements Op {}

    /** Allocates a type 2 window on B. */
    record AllocateWindow() implements Op {}

    /** Binds any window B ever allocated over any region it ever registered (closed ones included). */
    record Bind(int window, int region, Span span, Set<Access> rights) implements Op {}

    /** Where a bind lies in its region: inside, the whole region, or reaching past its end. */
    record Span(Fit fit, int offset, int length) {}

    enum Fit { INSIDE, WHOLE, PAST_END }

    /** LOCAL_INV on B of a window's current key (of a bound window, if there is one), the key before it, or a
     * corrupted one. */
    record Invalidate(int window, KeyAge key, int corruption) implements Op {}

    enum KeyAge { CURRENT, PREVIOUS, CORRUPTED }

    /** Deallocates one of B's live windows. */
    record DeallocateWindow(int window) implements Op {}

    /** One access of A to B's memory. */
    record Remote(Verb verb, Aim aim, int length, int localOffset, Operand operand) implements Op {}

    enum Verb { WRITE, READ, CMP_AND_SWP, FETCH_AND_ADD }

    /** Which key (of the {@code pick}-th region or window), and where relative to the range it names. */
    record Aim(Target target, int pick, Place place, int offset) {}

    /**
     * REGION: a region's key (deregistered ones too). WINDOW: the key of a bound window, if there is one.
     * STALE_WINDOW: a window's key that does not work (the one before a bind, or the last one of an invalidated,
     * deallocated or never bound window). FOREIGN: the key of A's own region (another PD).
     */
    enum Target { REGION, WINDOW, STALE_WINDOW, CORRUPTED_REGION, FOREIGN }

    /** MISALIGNED matters to atomics only; READ and WRITE take it as INSIDE. */
    enum Place { INSIDE, MISALIGNED, STRADDLING_END, PAST_END, BEFORE_START }

    /** FETCH_AND_ADD adds {@code value}; CMP_AND_SWP swaps in {@code ~value}, comparing with the current value
     * when {@code matching} and with {@code value} otherwise. */
    record Operand(long value, boolean matching) {}

    /** Programs start with a registration: before B has a region, A can only aim at its own. */
    private static Gen<List<Op>> programs() {
        return register().zip(lists().of(ops()).ofSizeBetween(0, MAX_STEPS - 1),
                (first, rest) -> Stream.concat(Stream.of(first), rest.stream()).toList());
    }

    private static Gen<Op> register() {
        return Generate.range(64, 4096).zip(registerRights(), Generate.range(0, 1 << 20), Register::new);
    }

    private static Gen<Op> ops() {
        Gen<Op> register = register();
        Gen<Op> deregister = index().map(Deregister::new);
        Gen<Op> allocate = Generate.constant(new AllocateWindow());
        Gen<Span> span = weighted(List.of(Pair.of(6, Fit.INSIDE), Pair.of(2, Fit.WHOLE), Pair.of(1, Fit.PAST_END)))
                .zip(Generate.range(0, 4095), Generate.range(0, 4095), Span::new);
        Gen<Set<Access>> windowRights = Generate.frequency(List.of(Pair.of(1, Generate.range(0, 7)),
                Pair.of(1, Generate.constant(7)))).map(m -> Access.of(m << 1)); // REMOTE_WRITE, _READ, _ATOMIC
        Gen<Op> bind = index().zip(index(), span, windowRights, Bind::new);
        Gen<Op> invalidate = index().zip(weighted(List.of(Pair.of(4, KeyAge.CURRENT), Pair.of(1, KeyAge.PREVIOUS),
                Pair.of(1, KeyAge.CORRUPTED))), Generate.range(0, 254), Invalidate::new);
        Gen<Op> deallocate = index().map(DeallocateWindow::new);
        Gen<Aim> aim = weighted(List.of(Pair.of(5, Target.REGION), Pair.of(4, Target.WINDOW),
                Pair.of(1, Target.STALE_WINDOW), Pair.of(1, Target.CORRUPTED_REGION), Pair.of(1, Target.FOREIGN)))
                .zip(index(), weighted(List.of(Pair.of(8, Place.INSIDE), Pair.of(2, Place.MISALIGNED),
                        Pair.of(1, Place.STRADDLING_END), Pair.of(1, Place.PAST_END), Pair.of(1, Place.BEFORE_START))),
                        Generate.range(0, 4095), Aim::new);
        Gen<Operand> operand = longs().all()
                .zip(weighted(List.of(Pair.of(2, true), Pair.of(1, false))), Operand::new);
        Gen<Op> remote = Generate.enumValues(Verb.class).zip(aim, Generate.range(0, 4095), Generate.range(0, 4095),
                operand, Remote::new);
        return Generate.frequency(List.of(Pair.of(4, register), Pair.of(1, deregister), Pair.of(2, allocate),
                Pair.of(4, bind), Pair.of(2, invalidate), Pair.of(1, deallocate), Pair.of(12, remote)));
    }

    private static Gen<Integer> index() {
        return Generate.range(0, 99);
    }

    /**
     * Any rights, but often all of them (most accesses allowed), and often valid ones without LOCAL_WRITE (binds
     * with remote write or atomic rights must fail over them).
     */
    private static Gen<Set<Access>> registerRights() {
        Gen<Integer> any = Generate.range(0, 31);
        Gen<Integer> writable = any.map(m -> m | Access.LOCAL_WRITE.bit());
        Gen<Integer> readOnly = any.map(m -> m & (Access.REMOTE_READ.bit() | Access.MW_BIND.bit()));
        Gen<Integer> all = Generate.constant(Access.mask(Set.of(Access.values())));
        return Generate.frequency(List.of(Pair.of(1, any), Pair.of(1, writable), Pair.of(1, readOnly),
                Pair.of(2, all))).map(Access::of);
    }

    private static <T> Gen<T> weighted(List<Pair<Integer, T>> choices) {
        return Generate.frequency(choices.stream().map(c -> Pair.of(c._1, Generate.constant(c._2))).toList());
    }

    // ---- one run -----------------------------------------------------------------------------------------------

    /** One side of the connection. */
    private record Side(ProtectionDomain pd, CompletionQueue cq, QueuePair qp) {
        static Side open(String device, ResourceGraph graph) {
            DeviceContext context = RdmaDevices.open(device, graph);
            ProtectionDomain pd = context.allocateProtectionDomain();
            CompletionQueue cq = context.createCompletionQueue(64);
            return new Side(pd, cq, pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT));
        }
    }

    /** What the model knows of a region B registered. */
    private static final class Region {
        final String name;
        final MemoryRegion handle;
        final MemorySegment memory;
        final byte[] expected;
        final Set<Access> rights;
        final int rkey;
        boolean closed;
        int boundWindows;

        Region(String name, MemoryRegion handle, MemorySegment memory, byte[] expected, Set<Access> rights) {
            this.name = name;
            this.handle = handle;
            this.memory = memory;
            this.expected = expected;
            this.rights = rights;
            this.rkey = handle.rkey();
        }

        /** A bound window keeps a closed region registered (ibv_dereg_mr would fail with EBUSY). */
        boolean registered() {
            return !closed || boundWindows > 0;
        }

        long address() {
            return memory.address();
        }

        int size() {
            return expected.length;
        }

        @Override
        public String toString() {
            String life = !closed ? "" : registered() ? ", closed but bound" : ", deregistered";
            return name + "(" + size() + " B " + rights + life + ")";
        }
    }

    /** What the model knows of a window B allocated. */
    private static final class Window {
        final String name;
        final MemoryWindow handle;
        int key;
        int postedKey; // the key the last bind posted took: each posted bind takes the next, whether it binds or not
        boolean bound;
        boolean deallocated;
        // The last binding, kept after it ends so that stale keys can aim at it.
        Region region;
        long start;
        long length;
        Set<Access> rights;

        Window(String name, MemoryWindow handle) {
            this.name = name;
            this.handle = handle;
            this.key = handle.rkey();
            this.postedKey = key;
        }

        @Override
        public String toString() {
            String state = deallocated ? "deallocated" : bound ? "bound to " + region.name + "+" + (start
                    - region.address()) + " len " + length + " " + rights : "unbound";
            return name + "(" + state + ")";
        }
    }

    /** An rkey to use, the range it was aimed at, and what it is. */
    private record Key(int rkey, long base, long extent, String what) {}

    /** The model's verdict on an access: the status, and for a success the region and offset it reaches. */
    private record Outcome(WcStatus status, Region region, int offset) {}

    private static final class Run implements AutoCloseable {
        private final ResourceGraph graph = ResourceGraph.builder().name("verbs-access").build();
        private final Arena arena = Arena.ofShared();
        private final Side a;
        private final Side b;
        private final MemoryRegion source;   // all rights: its rkey is the key of another protection domain
        private final MemoryRegion results;
        private final byte[] sourceModel = new byte[LOCAL_SIZE];
        private final byte[] resultsModel = new byte[LOCAL_SIZE];
        private final List<Region> regions = new ArrayList<>();
        private final List<Window> windows = new ArrayList<>();
        private final List<String> trace = new ArrayList<>();
        private int step;

        Run(String requester, String responder) {
            a = Side.open(requester, graph);
            b = Side.open(responder, graph);
            for (int i = 0; i < LOCAL_SIZE; i++) sourceModel[i] = (byte) (i * 31 + 7);
            MemorySegment src = arena.allocate(LOCAL_SIZE, 64);
            src.copyFrom(MemorySegment.ofArray(sourceModel));
            source = a.pd().register(src, Set.of(Access.values()));
            results = a.pd().register(arena.allocate(LOCAL_SIZE, 64), Set.of(Access.LOCAL_WRITE));
            connect();
        }

        void execute(List<Op> program) {
            for (Op op : program) {
                step++;
                switch (op) {
                    case Register r -> register(r);
                    case Deregister d -> deregister(d);
                    case AllocateWindow _ -> allocate();
                    case Bind bind -> bind(bind);
                    case Invalidate inv -> invalidate(inv);
                    case DeallocateWindow d -> deallocate(d);
                    case Remote r -> remote(r);
                }
                verify();
            }
        }

        // ---- B's objects ----

        private void register(Register op) {
            byte[] content = new byte[op.size()];
            new SplittableRandom(op.seed()).nextBytes(content);
            MemorySegment memory = arena.allocate(op.size(), 64);
            memory.copyFrom(MemorySegment.ofArray(content));
            if (needsLocalWrite(op.rights()) && !op.rights().contains(Access.LOCAL_WRITE)) {
                note("register " + op.size() + " B " + op.rights() + ": expect IllegalArgumentException");
                expectThrows(IllegalArgumentException.class, () -> b.pd().register(memory, op.rights()));
                return;
            }
            var region = new Region("mr" + regions.size(), b.pd().register(memory, op.rights()), memory, content,
                    op.rights());
            regions.add(region);
            note("register " + region + " rkey " + hex(region.rkey));
        }

        private void deregister(Deregister op) {
            Region r = pick(regions.stream().filter(x -> !x.closed).toList(), op.region());
            if (r == null) {
                note("deregister: no open region");
                return;
            }
            r.handle.close();
            r.closed = true;
            note("close " + r);
            expectState(r, r.boundWindows > 0 ? ResourceState.CLOSING : ResourceState.DESTROYED);
        }

        private void allocate() {
            var w = new Window("mw" + windows.size(), b.pd().allocateWindow(MwType.TYPE_2));
            windows.add(w);
            note("allocate " + w + " key " + hex(w.key));
        }

        private void deallocate(DeallocateWindow op) {
            Window w = pick(windows.stream().filter(x -> !x.deallocated).toList(), op.window());
            if (w == null) {
                note("deallocate: no live window");
                return;
            }
            note("deallocate " + w);
            w.handle.close();
            w.deallocated = true;
            if (w.bound) unbind(w);
            check(w.handle.resource().state() == ResourceState.DESTROYED, w + " is " + w.handle.resource().state());
        }

        private void bind(Bind op) {
            Window w = pick(windows, op.window());
            Region r = pick(regions, op.region());
            if (w == null || r == null) {
                note("bind: no window or no region");
                return;
            }
            Span s = op.span();
            long offset = s.fit() == Fit.WHOLE ? 0 : s.offset() % r.size();
            long length = switch (s.fit()) {
                case INSIDE -> 1 + s.length() % (r.size() - offset);
                case WHOLE -> r.size();
                case PAST_END -> r.size() - offset + 1 + s.length() % 64;
            };
            String what = "bind " + w + " over " + r + "+" + offset + " len " + length + " " + op.rights();
            if (s.fit() == Fit.PAST_END) {
                note(what + ": expect IllegalArgumentException");
                expectThrows(IllegalArgumentException.class,
                        () -> WorkRequest.bind(w.handle, r.handle, offset, length, op.rights()));
                return;
            }
            WorkRequest wr = WorkRequest.bind(w.handle, r.handle, offset, length, op.rights()).wrId(step);
            if (w.deallocated || r.closed) { // the NIC would reach a freed window, or a region handed back
                note(what + ": expect ResourceClosedException");
                expectThrows(ResourceClosedException.class, () -> b.qp().post(wr));
                check(b.qp().outstandingSends() == 0, "a refused bind left a request outstanding");
                return;
            }
            boolean allowed = !w.bound && r.rights.contains(Access.MW_BIND)
                    && (!needsLocalWrite(op.rights()) || r.rights.contains(Access.LOCAL_WRITE));
            WcStatus expected = allowed ? WcStatus.SUCCESS : WcStatus.MW_BIND_ERR;
            note(what + ": expect " + expected);
            b.qp().post(wr);
            w.postedKey = (w.postedKey & ~0xff) | ((w.postedKey + 1) & 0xff); // same index, next key byte
            expectCompletion(next(b.cq()), expected, WcOpcode.BIND_MW);
            if (allowed) {
                int key = w.postedKey;
                check(w.handle.rkey() == key, "key after the bind is " + hex(w.handle.rkey()) + ", not " + hex(key));
                w.key = key;
                w.bound = true;
                w.region = r;
                w.start = r.address() + offset;
                w.length = length;
                w.rights = op.rights();
                r.boundWindows++;
            } else {
                check(w.handle.rkey() == w.key, "a failed bind changed the key to " + hex(w.handle.rkey()));
                recover(false);
            }
            check(w.handle.isBound() == w.bound, w + ": isBound() says " + w.handle.isBound());
        }

        private void invalidate(Invalidate op) {
            List<Window> bound = windows.stream().filter(x -> x.bound).toList();
            Window w = pick(op.key() == KeyAge.CURRENT && !bound.isEmpty() ? bound : windows, op.window());
            if (w == null) {
                note("invalidate: no window");
                return;
            }
            int key = switch (op.key()) {
                case CURRENT -> w.key;
                case PREVIOUS -> previous(w.key);
                case CORRUPTED -> w.key ^ (1 + op.corruption());
            };
            boolean allowed = w.bound && key == w.key;
            WcStatus expected = allowed ? WcStatus.SUCCESS : WcStatus.MW_BIND_ERR;
            note("invalidate " + hex(key) + " (" + op.key() + " key of " + w + "): expect " + expected);
            b.qp().post(WorkRequest.invalidate(key).wrId(step));
            expectCompletion(next(b.cq()), expected, WcOpcode.LOCAL_INV);
            if (allowed) {
                unbind(w);
            } else {
                recover(false);
            }
            check(w.deallocated || w.handle.isBound() == w.bound, w + ": isBound() says " + w.handle.isBound());
        }

        /** The window no longer holds its region: a closed region is deregistered with its last window. */
        private void unbind(Window w) {
            w.bound = false;
            Region r = w.region;
            r.boundWindows--;
            if (r.closed) expectState(r, r.boundWindows > 0 ? ResourceState.CLOSING : ResourceState.DESTROYED);
        }

        // ---- A's accesses ----

        private void remote(Remote op) {
            boolean atomic = op.verb() == Verb.CMP_AND_SWP || op.verb() == Verb.FETCH_AND_ADD;
            Key key = key(op.aim());
            int length = atomic ? Long.BYTES : 1 + (int) (op.length() % Math.min(key.extent(), LOCAL_SIZE));
            long address = address(op.aim(), key, length, atomic);
            int local = op.localOffset() % (LOCAL_SIZE - length + 1);
            Outcome o = predict(op.verb(), key.rkey(), address, length);
            long value = op.operand().value();
            boolean hit = op.verb() == Verb.CMP_AND_SWP && o.status() == WcStatus.SUCCESS && op.operand().matching();
            long compare = hit ? longAt(o.region().expected, o.offset()) : value;
            note(op.verb() + " " + length + " B at " + key.what() + (address - key.base() >= 0 ? "+" : "")
                    + (address - key.base()) + " (rkey " + hex(key.rkey()) + "), local +" + local
                    + (op.verb() == Verb.CMP_AND_SWP ? ", compare " + compare : "") + ": expect " + o.status()
                    + (o.region() == null ? "" : " on " + o.region() + "+" + o.offset()));
            WorkRequest wr = switch (op.verb()) {
                case WRITE -> WorkRequest.write(source, local, length).remote(address, key.rkey());
                case READ -> WorkRequest.read(results, local, length).remote(address, key.rkey());
                case CMP_AND_SWP -> WorkRequest.compareAndSwap(results, local, address, key.rkey(), compare, ~value);
                case FETCH_AND_ADD -> WorkRequest.fetchAndAdd(results, local, address, key.rkey(), value);
            };
            a.qp().post(wr.wrId(step));
            WorkCompletion wc = next(a.cq());
            WcOpcode opcode = switch (op.verb()) {
                case WRITE -> WcOpcode.RDMA_WRITE;
                case READ -> WcOpcode.RDMA_READ;
                case CMP_AND_SWP -> WcOpcode.COMP_SWAP;
                case FETCH_AND_ADD -> WcOpcode.FETCH_ADD;
            };
            expectCompletion(wc, o.status(), opcode);
            if (o.status() != WcStatus.SUCCESS) {
                recover(true);
                return;
            }
            if (op.verb() != Verb.WRITE) {
                check(wc.byteLength() == length, "byte length " + wc.byteLength() + ", expected " + length);
            }
            byte[] target = o.region().expected;
            switch (op.verb()) {
                case WRITE -> System.arraycopy(sourceModel, local, target, o.offset(), length);
                case READ -> System.arraycopy(target, o.offset(), resultsModel, local, length);
                case CMP_AND_SWP, FETCH_AND_ADD -> {
                    long old = longAt(target, o.offset());
                    long now = op.verb() == Verb.FETCH_AND_ADD ? old + value : old == compare ? ~value : old;
                    setLong(target, o.offset(), now);
                    setLong(resultsModel, local, old);
                }
            }
        }

        /** The key the aim names and the range it aims at; with nothing of the kind yet, A's own key. */
        private Key key(Aim aim) {
            Region r = pick(regions, aim.pick());
            List<Window> bound = windows.stream().filter(x -> x.bound).toList();
            Window w = pick(aim.target() == Target.WINDOW && !bound.isEmpty() ? bound : windows, aim.pick());
            return switch (aim.target()) {
                case REGION -> r == null ? foreign(null) : new Key(r.rkey, r.address(), r.size(), r.toString());
                case CORRUPTED_REGION -> r == null ? foreign(null)
                        : new Key(r.rkey ^ (1 + aim.pick() % 255), r.address(), r.size(), "corrupted key of " + r);
                case WINDOW, STALE_WINDOW -> {
                    if (w == null) yield foreign(r);
                    boolean previous = aim.target() == Target.STALE_WINDOW && w.bound;
                    int k = previous ? previous(w.key) : w.key;
                    String what = (previous ? "previous key of " : "") + w;
                    if (w.region != null) yield new Key(k, w.start, w.length, what);
                    yield r == null ? new Key(k, source.address(), LOCAL_SIZE, what + " at A's source")
                            : new Key(k, r.address(), r.size(), what + " at " + r);
                }
                case FOREIGN -> foreign(r);
            };
        }

        /** A's source region's key (another PD, maybe another device), aimed at {@code r} or at itself. */
        private Key foreign(Region r) {
            return r == null ? new Key(source.rkey(), source.address(), LOCAL_SIZE, "A's source with its own key")
                    : new Key(source.rkey(), r.address(), r.size(), r + " with A's key");
        }

        private static long address(Aim aim, Key key, int length, boolean atomic) {
            long base = key.base();
            long end = base + key.extent();
            int offset = aim.offset();
            if (!atomic) {
                return switch (aim.place()) {
                    case INSIDE, MISALIGNED -> base + offset % (key.extent() - length + 1);
                    case STRADDLING_END -> end - length + 1 + offset % length;
                    case PAST_END -> end + offset % 64;
                    case BEFORE_START -> base - 1 - offset % 16;
                };
            }
            long first = alignUp(base);
            long slots = Math.max(1, (end - first) / Long.BYTES);
            return switch (aim.place()) {
                case INSIDE -> first + Long.BYTES * (offset % slots);
                case MISALIGNED -> first + Long.BYTES * (offset % slots) + 1 + offset % 7;
                case STRADDLING_END -> alignUp(end - Long.BYTES + 1);
                case PAST_END -> alignUp(end) + Long.BYTES * (offset % 8);
                case BEFORE_START -> alignUp(base) - Long.BYTES * (1 + offset % 2);
            };
        }

        /**
         * The model of B's responder. Alignment is checked before the key, as the soft provider does (rxe checks
         * the key first; the two differ only for a misaligned atomic through a bad key).
         */
        private Outcome predict(Verb verb, int rkey, long address, int length) {
            var denied = new Outcome(WcStatus.REM_ACCESS_ERR, null, 0);
            if ((verb == Verb.CMP_AND_SWP || verb == Verb.FETCH_AND_ADD) && (address & 7) != 0) {
                return new Outcome(WcStatus.REM_INV_REQ_ERR, null, 0);
            }
            Access right = switch (verb) {
                case WRITE -> Access.REMOTE_WRITE;
                case READ -> Access.REMOTE_READ;
                case CMP_AND_SWP, FETCH_AND_ADD -> Access.REMOTE_ATOMIC;
            };
            for (Region r : regions) {
                if (r.registered() && r.rkey == rkey) {
                    return r.rights.contains(right) && within(address, length, r.address(), r.size())
                            ? new Outcome(WcStatus.SUCCESS, r, (int) (address - r.address())) : denied;
                }
            }
            for (Window w : windows) {
                if (w.bound && w.key == rkey) {
                    return w.rights.contains(right) && within(address, length, w.start, w.length)
                            ? new Outcome(WcStatus.SUCCESS, w.region, (int) (address - w.region.address())) : denied;
                }
            }
            return denied;
        }

        // ---- checks ----

        /** Every region B ever registered, and A's buffers, equal the model; both QPs are ready; no stray completion. */
        private void verify() {
            for (Region r : regions) sameBytes(r.memory, r.expected, r.toString());
            sameBytes(source.segment(), sourceModel, "A's source");
            sameBytes(results.segment(), resultsModel, "A's results");
            expectQpStates(QpState.RTS, QpState.RTS);
            WorkCompletion[] stray = {new WorkCompletion()};
            check(a.cq().poll(stray) == 0, "stray completion on A: " + stray[0]);
            check(b.cq().poll(stray) == 0, "stray completion on B: " + stray[0]);
        }

        private void sameBytes(MemorySegment actual, byte[] expected, String what) {
            long at = actual.mismatch(MemorySegment.ofArray(expected));
            if (at >= 0) {
                throw failure(what + " differs from the model at offset " + at + ": "
                        + actual.get(ValueLayout.JAVA_BYTE, at) + " instead of " + expected[(int) at]);
            }
        }

        /** After an error: the QPs are in the states the model says, then both go back to RTS through RESET. */
        private void recover(boolean remote) {
            expectQpStates(remote ? QpState.ERROR : QpState.RTS, QpState.ERROR);
            a.qp().reset();
            b.qp().reset();
            connect();
        }

        private void connect() {
            QpInfo ia = a.qp().info(OPTIONS);
            QpInfo ib = b.qp().info(OPTIONS);
            a.qp().connect(ib, OPTIONS);
            b.qp().connect(ia, OPTIONS);
        }

        private void expectQpStates(QpState requester, QpState responder) {
            check(a.qp().state() == requester && b.qp().state() == responder, "QP states A " + a.qp().state()
                    + ", B " + b.qp().state() + "; expected A " + requester + ", B " + responder);
        }

        private void expectCompletion(WorkCompletion wc, WcStatus status, WcOpcode opcode) {
            check(wc.status() == status && wc.opcode() == opcode && wc.wrId() == step,
                    "got " + wc + ", expected " + status + " " + opcode + " of wr " + step);
        }

        private void expectState(Region r, ResourceState state) {
            check(r.handle.resource().state() == state, r + " is " + r.handle.resource().state() + ", not " + state);
        }

        private void expectThrows(Class<? extends Exception> type, Runnable call) {
            try {
                call.run();
            } catch (Exception e) {
                if (type.isInstance(e)) return;
                throw failure("threw " + e + " instead of " + type.getSimpleName(), e);
            }
            throw failure("did not throw " + type.getSimpleName());
        }

        private WorkCompletion next(CompletionQueue cq) {
            WorkCompletion[] one = {new WorkCompletion()};
            long deadline = System.nanoTime() + WAIT.toNanos();
            try {
                while (System.nanoTime() < deadline) {
                    if (cq.poll(one, Duration.ofMillis(100)) == 1) return one[0];
                }
            } catch (InterruptedException e) {
                throw failure("interrupted waiting for a completion", e);
            }
            throw failure("no completion on " + cq + " within " + WAIT);
        }

        private void note(String line) {
            trace.add("#" + step + " " + line);
        }

        private void check(boolean ok, String message) {
            if (!ok) throw failure(message);
        }

        private AssertionError failure(String message) {
            return failure(message, null);
        }

        private AssertionError failure(String message, Throwable cause) {
            return new AssertionError("step #" + step + ": " + message + "\nsteps, resolved:\n  "
                    + String.join("\n  ", trace), cause);
        }

        /** Closes everything through the graph: a destroy out of order or refused (EBUSY) fails the example. */
        @Override
        public void close() {
            try {
                graph.close();
                check(graph.failures().isEmpty() && graph.liveCount() == 0, "left behind:\n" + graph.dump());
            } finally {
                arena.close();
            }
        }
    }

    // ---- helpers -----------------------------------------------------------------------------------------------

    private static <T> T pick(List<T> list, int index) {
        return list.isEmpty() ? null : list.get(index % list.size());
    }

    private static boolean needsLocalWrite(Set<Access> rights) {
        return rights.contains(Access.REMOTE_WRITE) || rights.contains(Access.REMOTE_ATOMIC);
    }

    /** The key a type 2 window had before its last bind (or never had, if it was never bound). */
    private static int previous(int key) {
        return (key & ~0xff) | ((key - 1) & 0xff);
    }

    private static boolean within(long address, long length, long start, long extent) {
        return address >= start && address - start <= extent - length;
    }

    private static long alignUp(long address) {
        return (address + 7) & ~7L;
    }

    private static long longAt(byte[] bytes, int offset) {
        return MemorySegment.ofArray(bytes).get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
    }

    private static void setLong(byte[] bytes, int offset, long value) {
        MemorySegment.ofArray(bytes).set(ValueLayout.JAVA_LONG_UNALIGNED, offset, value);
    }

    private static String hex(int key) {
        return String.format("0x%08x", key);
    }
}
