package io.mooring.lease;

import java.util.ArrayDeque;

/**
 * Serves a session's control requests in order on a virtual thread that exists only while there are some: a task may
 * block — waiting for a bind's completion, for the arena — without holding up any other session, and a quiet session
 * keeps no thread, nor its stack (a session end's heap, issue 26). The queue is bounded by the control receives, each
 * of which is reposted only after its message was taken from here.
 */
final class SessionAgent {
    private static final System.Logger LOG = System.getLogger(SessionAgent.class.getName());

    private final String name;
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>(2); // guarded by this
    private Thread serving;                                          // guarded by this: null while idle
    private boolean stopped;                                         // guarded by this

    SessionAgent(String name) {
        this.name = name;
    }

    /**
     * Queues {@code task}, starting the thread if none serves; false if {@link ControlChannel#RECEIVES} wait already,
     * which the control channel's bound rules out. After {@link #stop()} a task is dropped: the session is ending.
     */
    synchronized boolean offer(Runnable task) {
        if (stopped) return true;
        if (tasks.size() >= ControlChannel.RECEIVES) return false;
        tasks.add(task);
        if (serving == null) serving = Thread.ofVirtual().name(name).start(this::serve);
        return true;
    }

    private void serve() {
        while (true) {
            Runnable task;
            synchronized (this) {
                task = stopped ? null : tasks.poll();
                if (task == null) {
                    serving = null;
                    return;
                }
            }
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, name + ": a task failed", e);
            }
        }
    }

    synchronized boolean isAgentThread() {
        return Thread.currentThread() == serving;
    }

    /** Stops serving after the current task (interrupting a wait in it) and waits for it, unless called from it. */
    void stop() {
        Thread t;
        synchronized (this) {
            stopped = true;
            tasks.clear();
            t = serving;
        }
        if (t == null || t == Thread.currentThread()) return;
        t.interrupt();
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
