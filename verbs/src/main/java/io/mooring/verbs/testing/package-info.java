/**
 * Facilities for tests, not for applications: a {@link io.mooring.verbs.testing.FaultPlan} says which faults the soft
 * provider's fabric injects (drops, duplicates, reordering, delays, cuts, stalled receives), a
 * {@link io.mooring.verbs.testing.FaultInjection} reports and ends them. Started with {@code injectFaults} of a
 * device context (every queue pair) or of one queue pair; a real NIC's faults cannot be scheduled.
 */
package io.mooring.verbs.testing;
