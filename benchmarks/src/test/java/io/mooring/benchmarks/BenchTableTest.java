package io.mooring.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class BenchTableTest {
    @Test
    void scoresBecomeTablesPerClassWithRatiosToMooringChecked() {
        double none = Double.NaN;
        List<Bench.Score> scores = List.of(
                new Bench.Score("AllocateClose", "nettyPooled", 1, 64, 50, "ns/op", 45, 0),
                new Bench.Score("AllocateClose", "mooringChecked", 1, 64, 25, "ns/op", 15, 96),
                new Bench.Score("AllocateClose", "mooringChecked", 1, 4096, 40, "ns/op", 30, 96),
                new Bench.Score("AllocateClose", "nettyPooled", 1, 4096, 120, "ns/op", 90, 0),
                new Bench.Score("SharedScopeClose", "ffmSharedArena", 2, 64, 61.5, "us/op", none, none));
        var out = new ByteArrayOutputStream();
        Bench.print(scores, new PrintStream(out, true, StandardCharsets.UTF_8));
        assertEquals("""
                AllocateClose, 1 thread

                CPU time, ns/op, × mooringChecked (above 1: slower than mooringChecked)

                | benchmark | 64 B | 4 KiB |
                | --- | ---: | ---: |
                | mooringChecked | 15.0 (1.00×) | 30.0 (1.00×) |
                | nettyPooled | 45.0 (3.00×) | 90.0 (3.00×) |

                wall time, ns/op, × mooringChecked (above 1: slower than mooringChecked)

                | benchmark | 64 B | 4 KiB |
                | --- | ---: | ---: |
                | mooringChecked | 25.0 (1.00×) | 40.0 (1.00×) |
                | nettyPooled | 50.0 (2.00×) | 120 (3.00×) |

                heap bytes allocated per operation (-prof gc)

                | benchmark | 64 B | 4 KiB |
                | --- | ---: | ---: |
                | mooringChecked | 96 | 96 |
                | nettyPooled | 0 | 0 |

                SharedScopeClose, 2 threads

                wall time, us/op, × ffmSharedArena (above 1: slower than ffmSharedArena)

                | benchmark | 64 B |
                | --- | ---: |
                | ffmSharedArena | 61.5 (1.00×) |

                """, out.toString(StandardCharsets.UTF_8));
    }
}
