package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The per-context QP table that every completion reads: lookups stay right through growth, removal and reuse. */
class QpTableTest {
    private static QpQueues queues() {
        return new QpQueues(new InFlight("send", false, 1), new InFlight("receive", true, 1), false, null, null);
    }

    @Test
    void findsEveryQpThroughGrowthAndRemovalAndANumberReused() {
        var table = new QpTable();
        List<QpQueues> added = new ArrayList<>();
        // sequential numbers (soft's) and numbers 2^16 apart, which a weak hash would pile into one bucket
        int[] numbers = new int[200];
        for (int i = 0; i < 100; i++) numbers[i] = 0x10 + i;
        for (int i = 100; i < 200; i++) numbers[i] = ((i - 99) << 16) | 0x11;
        for (int qpn : numbers) {
            QpQueues q = queues();
            table.put(qpn, q);
            added.add(q);
        }
        for (int i = 0; i < numbers.length; i++) assertSame(added.get(i), table.get(numbers[i]), "qpn " + numbers[i]);
        for (int i = 0; i < numbers.length; i += 2) table.remove(numbers[i], added.get(i));
        for (int i = 0; i < numbers.length; i++) {
            if (i % 2 == 0) assertNull(table.get(numbers[i]), "removed qpn " + numbers[i]);
            else assertSame(added.get(i), table.get(numbers[i]), "kept qpn " + numbers[i]);
        }
        QpQueues newer = queues();
        table.put(numbers[1], newer); // the number reused by a newer QP
        table.remove(numbers[1], added.get(1)); // the older QP's late removal leaves the newer one alone
        assertSame(newer, table.get(numbers[1]));
        assertNull(table.get(0xff_fffe));
    }
}
