package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The windows-by-rkey table agrees with a map through random binds and invalidations, over growth and deletion. */
class RkeyTableTest {
    @Test
    void agreesWithAMapUnderRandomPutsAndRemoves() {
        var table = new RkeyTable();
        Map<Integer, MemoryWindow.State> expected = new HashMap<>();
        var windows = new MemoryWindow.State[8];
        for (int i = 0; i < windows.length; i++) windows[i] = new MemoryWindow.State(table);
        var random = new Random(29);
        for (int op = 0; op < 200_000; op++) {
            // few distinct keys, many colliding in the low bits: long probe runs that removals must keep intact
            int key = random.nextInt(300) << 8 | (random.nextBoolean() ? 0 : 0x17);
            MemoryWindow.State w = windows[random.nextInt(windows.length)];
            if (random.nextInt(3) == 0) {
                table.remove(key, w);
                expected.remove(key, w);
            } else {
                table.put(key, w);
                expected.put(key, w);
            }
            int probe = random.nextInt(300) << 8 | (random.nextBoolean() ? 0 : 0x17);
            assertSame(expected.get(probe), table.get(probe), () -> "key 0x" + Integer.toHexString(probe));
        }
        for (var e : expected.entrySet()) assertSame(e.getValue(), table.get(e.getKey()));
    }
}
