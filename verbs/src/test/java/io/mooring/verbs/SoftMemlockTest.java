package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.soft.SoftProvider;
import io.mooring.verbs.values.Access;
import java.lang.foreign.Arena;
import java.util.EnumSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The soft provider's locked-memory limit: registrations past it fail as {@code ibv_reg_mr} does under ulimit -l. */
class SoftMemlockTest {
    private final ResourceGraph graph = ResourceGraph.builder().name("memlock-test").build();

    @AfterEach
    void teardown() {
        System.clearProperty(SoftProvider.MEMLOCK_PROPERTY);
        graph.close();
    }

    @Test
    void registeringPastTheLimitFailsWithEnomemAndTheHintAndDeregisteringGivesItBack() {
        ProtectionDomain pd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        try (Arena memory = Arena.ofConfined()) {
            var access = EnumSet.of(Access.LOCAL_WRITE);
            System.setProperty(SoftProvider.MEMLOCK_PROPERTY, String.valueOf(1 << 20));
            MemoryRegion first = pd.register(memory.allocate(768 << 10), access);
            VerbsException refused = assertThrows(VerbsException.class,
                    () -> pd.register(memory.allocate(512 << 10), access));
            assertEquals(Errno.ENOMEM.number(), refused.errno());
            assertTrue(refused.getMessage().contains("ulimit -l"), refused.getMessage());
            assertEquals(1, pd.resource().children().size(), "the refused region left nothing behind");
            first.close();
            pd.register(memory.allocate(512 << 10), access).close(); // the budget came back
        }
    }
}
