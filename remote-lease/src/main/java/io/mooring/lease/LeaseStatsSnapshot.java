package io.mooring.lease;

/** The {@link LeaseStats} a {@link LeaseManager} takes of its counters. */
record LeaseStatsSnapshot(Isolation isolation, int active, long activeBytes, long granted, long released,
                          long expired, long revoked, long refused, int pooledWindows) implements LeaseStats {}
