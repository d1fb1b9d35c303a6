package io.mooring.benchmarks;

import org.openjdk.jmh.annotations.Threads;

/** {@link SharedScopeClose} on two threads at once: each close handshakes with the other busy thread too. */
@Threads(2)
public class SharedScopeClose2Threads extends SharedScopeClose {}
