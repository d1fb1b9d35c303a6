package io.mooring.verbs.spi;

/** What the providers' own threads (the soft NIC's requesters, the ibv async event readers) share. */
public final class ProviderThreads {
    private ProviderThreads() {}

    /**
     * Waits until {@code thread} has ended, however often the caller is interrupted meanwhile, then restores the
     * caller's interrupt: a destroy that returned early would free what the thread still uses (native memory, a
     * queue's slots). The caller has told the thread to stop first.
     */
    public static void joinUninterruptibly(Thread thread) {
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }
}
