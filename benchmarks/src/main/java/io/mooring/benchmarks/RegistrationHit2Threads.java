package io.mooring.benchmarks;

import org.openjdk.jmh.annotations.Threads;

/** {@link RegistrationHit} on two threads at once, sharing one cache. */
@Threads(2)
public class RegistrationHit2Threads extends RegistrationHit {}
