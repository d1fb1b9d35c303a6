package io.mooring.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * What {@code ./mooring bench} runs: JMH with its usual command line plus {@link CpuTimeProfiler}, followed by
 * the results as Markdown tables with every score's ratio to Mooring checked's in the same run (the form
 * docs/benchmarks.md uses).
 * Listing and help options go straight to JMH's own {@code Main}, which is also the jar's main class.
 */
public final class Bench {
    /** The row order of the tables; benchmarks not listed follow in name order. */
    private static final List<String> ORDER = List.of("mooringChecked", "mooringUnchecked", "mooringShared",
            "nettyPooled", "nettyAdaptive", "ffmConfinedArena", "ffmConfinedScope", "ffmSharedArena", "mallocFfm", "jemallocFfm");
    private static final String GC_BYTES = "gc.alloc.rate.norm";

    /**
     * One benchmark result: class, method, thread count, size parameter, JMH's wall-clock score and its unit, the
     * CPU time per operation ({@link CpuTimeProfiler}) and heap bytes per operation ({@code -prof gc}); NaN when
     * not measured.
     */
    record Score(String family, String benchmark, int threads, int size, double wall, String unit, double cpu,
                 double heapBytes) {}

    /** One table: a column of each score. */
    private record Metric(String title, java.util.function.ToDoubleFunction<Score> value, boolean ratios) {}

    private Bench() {}

    public static void main(String[] args) throws Exception {
        var options = new CommandLineOptions(args);
        if (options.shouldHelp() || options.shouldList() || options.shouldListWithParams()
                || options.shouldListProfilers() || options.shouldListResultFormats()) {
            org.openjdk.jmh.Main.main(args);
            return;
        }
        var withCpuTime = new OptionsBuilder().parent(options).addProfiler(CpuTimeProfiler.class).build();
        Collection<RunResult> results = new Runner(withCpuTime).run();
        System.out.println();
        print(scores(results), System.out);
    }

    static List<Score> scores(Collection<RunResult> results) {
        List<Score> scores = new ArrayList<>();
        for (RunResult r : results) {
            String name = r.getParams().getBenchmark();
            String family = name.substring(0, name.lastIndexOf('.'));
            String size = r.getParams().getParam("size");
            scores.add(new Score(family.substring(family.lastIndexOf('.') + 1), name.substring(name.lastIndexOf('.') + 1),
                    r.getParams().getThreads(), size == null ? 0 : Integer.parseInt(size),
                    r.getPrimaryResult().getScore(), r.getPrimaryResult().getScoreUnit(),
                    secondary(r, CpuTimeProfiler.LABEL), secondary(r, GC_BYTES)));
        }
        return scores;
    }

    private static double secondary(RunResult r, String label) {
        Result<?> result = r.getSecondaryResults().get(label);
        return result == null ? Double.NaN : result.getScore();
    }

    /**
     * Per benchmark class, a table per measured metric (CPU time, wall time, heap bytes): scores by size, times
     * with their ratio to the reference row's at the same size (Mooring checked, or the first row when it did
     * not run).
     */
    static void print(List<Score> scores, PrintStream out) {
        Map<String, List<Score>> families = new LinkedHashMap<>();
        for (Score s : scores) families.computeIfAbsent(s.family(), k -> new ArrayList<>()).add(s);
        for (var family : families.entrySet()) {
            List<Score> rows = family.getValue();
            var sizes = new TreeSet<Integer>();
            var benchmarks = new TreeSet<String>(Comparator.comparingInt(Bench::rank).thenComparing(b -> b));
            for (Score s : rows) {
                sizes.add(s.size());
                benchmarks.add(s.benchmark());
            }
            String reference = benchmarks.first();
            Score first = rows.getFirst();
            out.printf(Locale.ROOT, "%s, %d thread%s%n%n", family.getKey(), first.threads(),
                    first.threads() == 1 ? "" : "s");
            String ratio = ", × " + reference + " (above 1: slower than " + reference + ")";
            for (Metric m : List.of(
                    new Metric("CPU time, " + first.unit() + ratio, Score::cpu, true),
                    new Metric("wall time, " + first.unit() + ratio, Score::wall, true),
                    new Metric("heap bytes allocated per operation (-prof gc)", Score::heapBytes, false))) {
                if (rows.stream().allMatch(s -> Double.isNaN(m.value().applyAsDouble(s)))) continue;
                out.println(m.title() + "\n");
                out.print("| benchmark |");
                sizes.forEach(size -> out.print(" " + bytes(size) + " |"));
                out.print("\n| --- |");
                sizes.forEach(size -> out.print(" ---: |"));
                out.println();
                for (String b : benchmarks) {
                    out.print("| " + b + " |");
                    for (int size : sizes) {
                        Score s = find(rows, b, size);
                        Score ref = find(rows, reference, size);
                        double v = s == null ? Double.NaN : m.value().applyAsDouble(s);
                        if (Double.isNaN(v)) {
                            out.print(" |");
                            continue;
                        }
                        out.print(" " + (m.ratios() ? number(v) : String.format(Locale.ROOT, "%.0f", v)));
                        if (m.ratios() && ref != null) {
                            out.printf(Locale.ROOT, " (%.2f×)", v / m.value().applyAsDouble(ref));
                        }
                        out.print(" |");
                    }
                    out.println();
                }
                out.println();
            }
        }
    }

    private static Score find(List<Score> rows, String benchmark, int size) {
        for (Score s : rows) if (s.benchmark().equals(benchmark) && s.size() == size) return s;
        return null;
    }

    private static int rank(String benchmark) {
        int i = ORDER.indexOf(benchmark);
        return i < 0 ? ORDER.size() : i;
    }

    private static String bytes(int size) {
        if (size == 0) return "mixed sizes"; // a benchmark without a size parameter (StorageMix)
        if (size >= 1024 && size % 1024 == 0) return (size >> 10) + " KiB";
        return size + " B";
    }

    private static String number(double score) {
        return score >= 100 ? String.format(Locale.ROOT, "%.0f", score) : String.format(Locale.ROOT, "%.1f", score);
    }
}
