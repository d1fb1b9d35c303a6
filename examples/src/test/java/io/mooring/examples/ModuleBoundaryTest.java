package io.mooring.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.module.ModuleDescriptor;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * What an application module sees of Mooring on the module path: each library module exports exactly its API
 * packages, to everyone, and nothing else — the provider SPI, the providers and the allocator's internals cannot be
 * reached, not even by reflection.
 */
class ModuleBoundaryTest {
    private static final Map<String, Set<String>> API = Map.of(
            "io.mooring.lifecycle", Set.of("io.mooring.lifecycle"),
            "io.mooring.verbs", Set.of("io.mooring.verbs", "io.mooring.verbs.values", "io.mooring.verbs.testing"),
            "io.mooring.allocator", Set.of("io.mooring.allocator", "io.mooring.regcache"),
            "io.mooring.lease", Set.of("io.mooring.lease"));

    @Test
    void eachLibraryModuleExportsOnlyItsApiPackage() {
        Module application = ModuleBoundaryTest.class.getModule();
        assertTrue(application.isNamed(), "the test runs inside the examples module, on the module path");
        API.forEach((name, api) -> {
            Module module = ModuleLayer.boot().findModule(name).orElseThrow(() -> new AssertionError(name));
            Set<String> exported = module.getDescriptor().exports().stream()
                    .peek(e -> assertFalse(e.isQualified(), () -> name + " exports " + e + " to chosen modules"))
                    .map(ModuleDescriptor.Exports::source).collect(Collectors.toSet());
            assertEquals(api, exported, name + "'s exports");
            for (String p : module.getPackages()) {
                assertEquals(api.contains(p), module.isExported(p, application), () -> name + " shows " + p);
                assertFalse(module.isOpen(p, application), () -> name + " opens " + p + " to reflection");
            }
        });
        assertTrue(ModuleLayer.boot().findModule("io.mooring.verbs").orElseThrow().getPackages()
                .containsAll(Set.of("io.mooring.verbs.spi", "io.mooring.verbs.soft", "io.mooring.verbs.ibv")));
    }

    @Test
    void aProviderCannotBeMadeFromOutside() throws Exception {
        Class<?> soft = Class.forName("io.mooring.verbs.soft.SoftProvider");
        assertThrows(IllegalAccessException.class, () -> soft.getConstructor().newInstance());
    }
}
