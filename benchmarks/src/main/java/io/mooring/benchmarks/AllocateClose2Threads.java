package io.mooring.benchmarks;

import org.openjdk.jmh.annotations.Threads;

/** {@link AllocateClose} on two threads at once, each allocating and freeing its own buffers from a shared allocator. */
@Threads(2)
public class AllocateClose2Threads extends AllocateClose {}
