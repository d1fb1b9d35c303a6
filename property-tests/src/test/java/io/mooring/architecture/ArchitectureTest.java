package io.mooring.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.architecture.SourceTree.Source;
import java.io.IOException;
import java.lang.classfile.Attributes;
import java.lang.classfile.ClassModel;
import java.lang.classfile.MethodModel;
import java.lang.reflect.AccessFlag;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The mechanical parts of {@code docs/api-style.md} and of the layering, checked over the whole project: each rule
 * lists what breaks it, less a short "pending" list of what issue #29's other branches are fixing now. A pending
 * entry that is no longer found fails too, so the lists only shrink.
 */
class ArchitectureTest {
    /** The layers, bottom up: a module may require (and import) only modules of a lower layer. */
    static final Map<String, Integer> LAYERS = Map.of(
            "io.mooring.lifecycle", 0,
            "io.mooring.verbs", 1,
            "io.mooring.allocator", 2,
            "io.mooring.lease", 3,
            "io.mooring.chronicle", 3, // an adapter over the allocator, beside the leases
            "io.mooring.netty", 4,
            "io.mooring.examples", 5, // applications on the public API
            "io.mooring.cli", 6);
    /** The library modules: their exported packages are the public API the style rules hold for. */
    static final Set<String> LIBRARIES = Set.of("io.mooring.lifecycle", "io.mooring.verbs", "io.mooring.allocator",
            "io.mooring.lease", "io.mooring.chronicle", "io.mooring.netty");
    static final String ROOT_EXCEPTION = "io/mooring/lifecycle/MooringException";

    /** The one home of the kernel's page size. */
    static final String PAGE_HOME = "allocator/src/main/java/io/mooring/allocator/internal/KernelPage.java";
    /** The one home of JVM-wide background threads. */
    static final String HOUSEKEEPER = "lifecycle/src/main/java/io/mooring/lifecycle/Housekeeper.java";
    static final int MAX_LINES = 500;
    /** Longer classes, each with why it is long and, where a split is due, its issue. */
    static final Set<String> LONG_ALLOWED = Set.of(
            "verbs/src/main/java/io/mooring/verbs/ibv/IbvStructs.java"); // an ABI header: offsets of the C structs

    /** Issue #29: what does not follow the rules yet (docs/api-style.md's table says what each becomes). */
    static final Set<String> PENDING_ASYNC = Set.of();
    static final Set<String> PENDING_TIMEOUT = Set.of();
    static final Set<String> PENDING_EXCEPTIONS = Set.of();
    static final Set<String> PENDING_ORDINAL = Set.of();
    static final Set<String> PENDING_CONFIGURATION = Set.of();
    /**
     * What a device or peer reports in the verbs' own fields, read by a user and never given: the configuration rule
     * does not hold for them.
     */
    static final Set<String> REPORTED = Set.of("io.mooring.verbs.QpInfo", "io.mooring.verbs.values.PortAttributes");
    static final Set<String> PENDING_LONG = Set.of();
    /** Use after close still throwing a plain IllegalStateException (#29 emptied it). */
    static final Set<String> PENDING_CLOSED = Set.of();
    /** A closed JDK object met (an Arena's segment): what the JDK throws for it, as api-style.md says. */
    static final Set<String> CLOSED_AS_THE_JDK = Set.of("verbs/src/main/java/io/mooring/verbs/ProtectionDomain.java");
    /** Daemon threads still to move onto the Housekeeper or to be allowed (#29 emptied it). */
    static final Set<String> PENDING_DAEMONS = Set.of();
    /** Daemon threads that are no housekeeping: each blocks or spins where a housekeeper task must not. */
    static final Set<String> DAEMONS_ALLOWED = Set.of(
            // JMH's workers in the benchmarks
            "benchmarks/src/main/java/io/mooring/benchmarks/FastThreadExecutor.java",
            // one per CQ: blocks in the provider on the completion channel (or spins, BUSY_POLL), completing futures
            "verbs/src/main/java/io/mooring/verbs/CompletionDispatcher.java",
            // one per device context: blocks in poll(2) on the async fd, and acknowledges each event at once
            "verbs/src/main/java/io/mooring/verbs/ibv/IbvAsyncEvents.java",
            // opt-in platform thread per soft QP (the NIC's engine), ends after 100 ms idle
            "verbs/src/main/java/io/mooring/verbs/soft/Requester.java");

    private static final Pattern GETPAGESIZE = Pattern.compile("\\bgetpagesize\\b");
    private static final Pattern PAGE_CONSTANT =
            Pattern.compile("(?i)\\b\\w*page\\w*\\s*=\\s*(4096|0x1000|1\\s*<<\\s*12|4\\s*<<\\s*10)L?\\b");
    private static final Pattern PAGE_LITERAL = Pattern.compile("(?i)\\b4096\\b.*//.*\\bpage");
    /** A method named for a time a user gives or reads; {@code …Nanos} (a loop's clock, no object per call) is not. */
    private static final Pattern TIME_NAME = Pattern.compile(
            "(?i)(timeout|timer|delay|period|interval|linger|backoff|lifetime|duration|ttl)$");
    /** A public method's declaration: whether it overrides (a JDK signature), its name and its parameters. */
    private static final Pattern PUBLIC_METHOD = Pattern.compile(
            "(@Override\\s+)?public\\s+(?:static\\s+|final\\s+|synchronized\\s+|default\\s+)*"
                    + "[\\w<>\\[\\]?, .]+?\\s(\\w+)\\(([^)]*)\\)");
    /** A parameter that is a time as a number, by its name. */
    private static final Pattern TIME_PARAMETER = Pattern.compile(
            "\\b(long|int)\\s+\\w*(?i:nanos|micros|millis|seconds|timeout|delay|period)\\b");
    /** A callback called on every pass of a loop may take nanoseconds: no object per call (api-style.md). */
    static final Set<String> LOOP_CLOCKS = Set.of("lifecycle/src/main/java/io/mooring/lifecycle/IdleStrategy.java",
            "lifecycle/src/main/java/io/mooring/lifecycle/BackoffIdleStrategy.java",
            "verbs/src/main/java/io/mooring/verbs/IdleDelivery.java");
    /** An IllegalStateException made for a use after close: its argument speaks of closed or destroyed. */
    private static final Pattern ILLEGAL_STATE = Pattern.compile("new IllegalStateException\\(([^;]*)");
    private static final Pattern CLOSED = Pattern.compile("(?i)closed|destroyed");
    private static final Pattern ORDINAL = Pattern.compile("\\.ordinal\\(\\)|\\bordinal\\(\\)");
    /** Wire code: what encodes or decodes bytes for a peer, by its tools or its name. */
    private static final Pattern WIRE = Pattern.compile(
            "\\b(ByteBuffer|DataOutputStream|DataInputStream|DataOutput|DataInput)\\b");
    private static final Pattern WIRE_NAME = Pattern.compile("Codec|Wire|Message|Link|Fabric|Frame");
    private static final Pattern DAEMON = Pattern.compile(
            "\\.daemon\\(|setDaemon\\(\\s*true|Cleaner\\.create\\(|newSingleThreadScheduledExecutor\\(|newScheduledThreadPool\\(");

    static SourceTree tree;
    /** The public types by internal name, and the superclass of each. */
    static Map<String, ClassModel> api;
    static final Map<String, String> supers = new HashMap<>();

    @BeforeAll
    static void readTheProject() throws IOException {
        tree = SourceTree.ofProject();
        api = api();
        api.forEach((name, c) -> supers.put(name, c.superclass().map(s -> s.asInternalName()).orElse(null)));
    }

    @Test
    void moduleArrowsFollowTheLayers() {
        Set<String> found = new TreeSet<>();
        for (var m : tree.modules) {
            Integer layer = LAYERS.get(m.name());
            if (layer == null) {
                found.add(m.name() + " has no layer: add it to ArchitectureTest.LAYERS");
                continue;
            }
            for (String r : m.requires()) {
                Integer below = LAYERS.get(r);
                if (below != null && below >= layer) found.add(m.name() + " requires " + r + ", a layer not below it");
            }
        }
        Map<String, String> owners = tree.packageOwners();
        Map<String, String> moduleOfDir = new HashMap<>();
        tree.modules.forEach(m -> moduleOfDir.put(m.dir().getFileName().toString(), m.name()));
        Pattern imports = Pattern.compile("^import\\s+(?:static\\s+)?(io\\.mooring\\.[\\w.]+)\\.[\\w*]+\\s*;",
                Pattern.MULTILINE);
        for (Source s : tree.sources) {
            String from = moduleOfDir.get(s.moduleDir());
            if (from == null) continue; // benchmarks, test support: no module, at the top
            for (var m = imports.matcher(s.text()); m.find(); ) {
                String to = ownerOf(m.group(1), owners);
                if (to != null && !to.equals(from) && LAYERS.getOrDefault(to, 0) >= LAYERS.getOrDefault(from, 0)) {
                    found.add(relative(s) + " imports " + m.group(1) + " of " + to + ", a layer not below " + from);
                }
            }
        }
        assertEquals(List.of(), List.copyOf(found), "module arrows against the layers " + LAYERS);
    }

    /** The package, or (for a nested type's import) the package it is in. */
    private static String ownerOf(String name, Map<String, String> owners) {
        for (String n = name; n.contains("."); n = n.substring(0, n.lastIndexOf('.'))) {
            if (owners.containsKey(n)) return owners.get(n);
        }
        return null;
    }

    @Test
    void publicMethodsFollowTheAsyncAndTimeoutRules() {
        Set<String> async = new TreeSet<>(), timeout = new TreeSet<>();
        Set<String> futureMethods = Arrays.stream(java.util.concurrent.CompletableFuture.class.getMethods())
                .map(Method::getName).collect(Collectors.toSet());
        for (ClassModel c : api.values()) {
            boolean isFuture = isUnder(c.thisClass().asInternalName(), "java/util/concurrent/CompletableFuture");
            for (MethodModel m : c.methods()) {
                if (!isApi(m)) continue;
                String name = m.methodName().stringValue();
                String where = binaryName(c) + "#" + name;
                String returns = m.methodTypeSymbol().returnType().descriptorString();
                boolean future = returns.equals("Ljava/util/concurrent/CompletableFuture;")
                        || returns.equals("Ljava/util/concurrent/CompletionStage;");
                boolean event = name.endsWith("ed") && m.methodTypeSymbol().parameterCount() == 0; // closed(), ended()
                // cq.newFuture(): a future its caller completes, made, not an operation started
                boolean factory = name.startsWith("new") && m.methodTypeSymbol().parameterCount() == 0;
                if (future && !name.endsWith("Async") && !event && !factory
                        && !(isFuture && futureMethods.contains(name))) {
                    async.add(where);
                }
                if (name.endsWith("Async") && !returns.equals("Ljava/util/concurrent/CompletableFuture;")) {
                    async.add(where + " (an Async method returns a CompletableFuture)");
                }
                boolean throwsTimeout = m.findAttribute(Attributes.exceptions()).stream()
                        .flatMap(e -> e.exceptions().stream())
                        .anyMatch(e -> e.asInternalName().equals("java/util/concurrent/TimeoutException"));
                if (throwsTimeout) timeout.add(where);
            }
        }
        assertEquals(List.of(), SourceTree.unexpected(async, PENDING_ASYNC),
                "a public method returning a future is named xxxAsync (an event's future: a past participle, closed())");
        assertEquals(List.of(), SourceTree.unexpected(timeout, PENDING_TIMEOUT),
                "a timeout is a MooringTimeoutException, never the checked TimeoutException");
    }

    @Test
    void everyPublicExceptionIsAMooringException() {
        Set<String> found = new TreeSet<>();
        for (var c : api.values()) {
            String name = c.thisClass().asInternalName();
            if (isUnder(name, "java/lang/Throwable") && !isUnder(name, ROOT_EXCEPTION)) found.add(binaryName(c));
        }
        assertEquals(List.of(), SourceTree.unexpected(found, PENDING_EXCEPTIONS),
                "a public exception extends MooringException (or one of its subclasses)");
    }

    private static boolean isUnder(String name, String root) {
        for (String n = name; n != null; n = superOf(n)) {
            if (n.equals(root)) return true;
        }
        return false;
    }

    private static String superOf(String name) {
        if (supers.containsKey(name)) return supers.get(name);
        try { // outside the API: a JDK class (loading it is harmless)
            Class<?> s = Class.forName(name.replace('/', '.'), false, ClassLoader.getSystemClassLoader()).getSuperclass();
            return s == null ? null : s.getName().replace('.', '/');
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /**
     * Configuration by name: no public record of three or more numbers of one type (a builder names each, as
     * {@code QpCapabilities}); stats an interface; a time a user gives or reads a {@code Duration}, never a number
     * (a method named for a time that takes or returns an {@code int} or {@code long}).
     */
    @Test
    void configurationIsByNameStatsAreInterfacesTimesAreDurations() {
        Set<String> found = new TreeSet<>();
        for (ClassModel c : api.values()) {
            String type = binaryName(c);
            if (REPORTED.contains(type)) continue;
            var record = c.findAttribute(Attributes.record());
            if (record.isPresent()) {
                Map<String, Long> numbers = record.get().components().stream()
                        .map(r -> r.descriptorSymbol().descriptorString()).filter(d -> d.matches("[IJD]"))
                        .collect(Collectors.groupingBy(d -> d, Collectors.counting()));
                if (numbers.values().stream().anyMatch(n -> n >= 3)) found.add(type + " (a positional record)");
            }
            if (type.endsWith("Stats") && !c.flags().has(AccessFlag.INTERFACE)) {
                found.add(type + " (stats, not an interface)");
            }
            for (MethodModel m : c.methods()) {
                if (!isApi(m) || !TIME_NAME.matcher(m.methodName().stringValue()).find()) continue;
                var t = m.methodTypeSymbol();
                boolean number = t.returnType().descriptorString().matches("[IJ]")
                        || t.parameterList().stream().anyMatch(p -> p.descriptorString().matches("[IJ]"));
                if (number) found.add(type + "#" + m.methodName().stringValue() + " (a time as a number)");
            }
        }
        for (Source s : tree.sources) { // parameter names are in the sources only
            if (!exported(s) || LOOP_CLOCKS.contains(relative(s))) continue;
            for (var m = PUBLIC_METHOD.matcher(s.code()); m.find(); ) {
                if (m.group(1) == null && TIME_PARAMETER.matcher(m.group(3)).find()) {
                    found.add(relative(s) + " " + m.group(2) + "(" + m.group(3).strip() + ") (a time as a number)");
                }
            }
        }
        assertEquals(List.of(), SourceTree.unexpected(found, PENDING_CONFIGURATION),
                "configuration by builders, stats as interfaces, Duration for time (docs/api-style.md)");
    }

    /** A use after close throws ResourceClosedException (api-style.md), never a plain IllegalStateException. */
    @Test
    void useAfterCloseIsAResourceClosedException() {
        Set<String> found = new TreeSet<>();
        for (Source s : tree.sources) {
            if (!exported(s) || CLOSED_AS_THE_JDK.contains(relative(s))) continue;
            for (var m = ILLEGAL_STATE.matcher(s.withoutComments()); m.find(); ) {
                if (CLOSED.matcher(m.group(1)).find()) found.add(relative(s));
            }
        }
        assertEquals(List.of(), SourceTree.unexpected(found, PENDING_CLOSED),
                "an object used after close throws ResourceClosedException, naming what was closed");
    }

    /** Whether {@code s} is in an exported package of a library module. */
    private static boolean exported(Source s) {
        for (var m : tree.modules) {
            if (!LIBRARIES.contains(m.name()) || !s.path().startsWith(m.sources())) continue;
            String pkg = m.sources().relativize(s.path().getParent()).toString().replace('/', '.');
            return m.exports().contains(pkg);
        }
        return false;
    }

    /** Words design.md's glossary replaced, by the glossary's word: a public name uses the glossary's. */
    static final Map<String, String> SYNONYMS = Map.of("expose", "grant", "hold", "pin", "tryhold", "tryPin",
            "unhold", "release (a pin)", "users", "pins", "unpin", "release (a pin)");

    @Test
    void publicNamesUseTheGlossary() {
        Set<String> found = new TreeSet<>();
        for (ClassModel c : api.values()) {
            String type = binaryName(c);
            String simple = type.substring(Math.max(type.lastIndexOf('.'), type.lastIndexOf('$')) + 1);
            String word = SYNONYMS.get(simple.toLowerCase(java.util.Locale.ROOT));
            if (word != null) found.add(type + " (the glossary says " + word + ")");
            for (MethodModel m : c.methods()) {
                word = SYNONYMS.get(m.methodName().stringValue().toLowerCase(java.util.Locale.ROOT));
                if (isApi(m) && word != null) {
                    found.add(type + "#" + m.methodName() + " (the glossary says " + word + ")");
                }
            }
        }
        assertEquals(List.of(), List.copyOf(found), "public names use design.md's glossary");
    }

    @Test
    void theKernelPageHasOneHome() {
        Set<String> found = new TreeSet<>();
        for (Source s : tree.sources) {
            if (relative(s).equals(PAGE_HOME)) continue;
            String code = s.code();
            boolean bound = GETPAGESIZE.matcher(code).find() || s.withoutComments().contains("\"getpagesize\"");
            if (bound || PAGE_CONSTANT.matcher(code).find()
                    || s.lines().stream().anyMatch(l -> PAGE_LITERAL.matcher(l).find())) {
                found.add(relative(s));
            }
        }
        assertEquals(List.of(), List.copyOf(found), "the kernel's page size is KernelPage's alone (" + PAGE_HOME + ")");
    }

    @Test
    void wireCodeWritesNoOrdinal() {
        Set<String> found = new TreeSet<>();
        for (Source s : tree.sources) {
            String code = s.code();
            boolean wire = WIRE.matcher(code).find() || WIRE_NAME.matcher(s.fileName()).find();
            if (wire && ORDINAL.matcher(code).find()) found.add(relative(s));
        }
        assertEquals(List.of(), SourceTree.unexpected(found, PENDING_ORDINAL),
                "wire code writes a stable code of its own, never an enum's ordinal()");
    }

    @Test
    void noClassIsLongerThan500Lines() {
        Set<String> found = new TreeSet<>();
        for (Source s : tree.sources) {
            if (s.lines().size() > MAX_LINES && !LONG_ALLOWED.contains(relative(s))) found.add(relative(s));
        }
        assertEquals(List.of(), SourceTree.unexpected(found, PENDING_LONG), "classes over " + MAX_LINES + " lines");
    }

    @Test
    void backgroundThreadsAreTheHousekeepers() {
        Set<String> found = new TreeSet<>();
        for (Source s : tree.sources) {
            String at = relative(s);
            if (!at.equals(HOUSEKEEPER) && !DAEMONS_ALLOWED.contains(at) && DAEMON.matcher(s.code()).find()) found.add(at);
        }
        assertEquals(List.of(), SourceTree.unexpected(found, PENDING_DAEMONS),
                "a JVM-wide daemon thread (or a Cleaner, or a scheduler) outside the Housekeeper");
    }

    @Test
    void theRulesSeeTheWholeProject() {
        assertTrue(tree.sources.size() > 100, "main sources found: " + tree.sources.size());
        assertTrue(api.containsKey(ROOT_EXCEPTION), "the exception root is in the API");
        assertTrue(api.containsKey("io/mooring/lease/RdmaSession"), "the lease API is seen");
    }

    /** Every class of every exported package of the library modules; each package must be on the class path. */
    private static Map<String, ClassModel> api() throws IOException {
        Map<String, ClassModel> api = new HashMap<>();
        for (var m : tree.modules) {
            if (!LIBRARIES.contains(m.name())) continue;
            for (String pkg : m.exports()) {
                Map<String, ClassModel> classes = SourceTree.classesOf(pkg);
                if (classes.isEmpty()) {
                    throw new AssertionError("package " + pkg + " of " + m.name() + " is not on the class path:"
                            + " add its module as a test dependency of property-tests");
                }
                classes.forEach((name, c) -> { if (isApi(c, classes)) api.put(name, c); });
            }
        }
        return api;
    }

    /** A public type, and for a nested one every type around it public too. */
    private static boolean isApi(ClassModel c, Map<String, ClassModel> samePackage) {
        String name = c.thisClass().asInternalName();
        int dollar = name.lastIndexOf('$');
        if (dollar < 0) return c.flags().has(AccessFlag.PUBLIC);
        var self = c.findAttribute(Attributes.innerClasses()).stream().flatMap(a -> a.classes().stream())
                .filter(i -> i.innerClass().asInternalName().equals(name)).findFirst();
        if (self.isEmpty() || self.get().innerName().isEmpty()) return false; // anonymous or local
        boolean open = self.get().has(AccessFlag.PUBLIC) || self.get().has(AccessFlag.PROTECTED);
        ClassModel outer = samePackage.get(name.substring(0, dollar));
        return open && outer != null && isApi(outer, samePackage);
    }

    private static boolean isApi(MethodModel m) {
        return (m.flags().has(AccessFlag.PUBLIC) || m.flags().has(AccessFlag.PROTECTED))
                && !m.flags().has(AccessFlag.SYNTHETIC) && !m.flags().has(AccessFlag.BRIDGE);
    }

    private static String binaryName(ClassModel c) {
        return c.thisClass().asInternalName().replace('/', '.');
    }

    private static String relative(Source s) {
        return tree.root.relativize(s.path()).toString();
    }
}
