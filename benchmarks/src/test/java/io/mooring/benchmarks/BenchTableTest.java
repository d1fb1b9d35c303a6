package io.mooring.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class BenchTableTest {
    @Test
    void scoresBecomeOneTablePerClassWithRatiosToMooringChecked() {
        List<Bench.Score> scores = List.of(
                new Bench.Score("AllocateClose", "nettyPooled", 1, 64, 50, "ns/op", 0),
                new Bench.Score("AllocateClose", "mooringChecked", 1, 64, 25, "ns/op", 96),
                new Bench.Score("AllocateClose", "mooringChecked", 1, 4096, 40, "ns/op", 96),
                new Bench.Score("AllocateClose", "nettyPooled", 1, 4096, 120, "ns/op", 0),
                new Bench.Score("SharedScopeClose", "ffmSharedArena", 1, 64, 61.5, "us/op", Double.NaN));
        var out = new ByteArrayOutputStream();
        Bench.print(scores, new PrintStream(out, true, StandardCharsets.UTF_8));
        assertEquals("""
                AllocateClose, 1 thread: ns/op, and its ratio to mooringChecked's (above 1: slower than mooringChecked)

                | benchmark | 64 B | 4 KiB |
                | --- | ---: | ---: |
                | mooringChecked | 25.0 (1.00×), 96 B | 40.0 (1.00×), 96 B |
                | nettyPooled | 50.0 (2.00×), 0 B | 120 (3.00×), 0 B |

                (x B: heap bytes allocated per operation, from -prof gc)

                SharedScopeClose, 1 thread: us/op, and its ratio to ffmSharedArena's (above 1: slower than ffmSharedArena)

                | benchmark | 64 B |
                | --- | ---: |
                | ffmSharedArena | 61.5 (1.00×) |

                """, out.toString(StandardCharsets.UTF_8));
    }
}
