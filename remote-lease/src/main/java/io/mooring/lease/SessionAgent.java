package io.mooring.lease;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/**
 * The one virtual thread that serves a session's control messages in order. It may block — waiting for a bind's
 * completion, for the arena — without holding up any other session, and a session costs no platform thread. Its
 * queue is bounded by the control receives, each of which is reposted only after its message was taken from here.
 */
final class SessionAgent {
    private final BlockingQueue<Runnable> tasks = new ArrayBlockingQueue<>(ControlChannel.RECEIVES);
    private final Thread thread;

    SessionAgent(String name) {
        this.thread = Thread.ofVirtual().name(name).unstarted(this::run);
    }

    void start() {
        thread.start();
    }

    /** Queues {@code task}; false if the queue is full, which the control channel's bound rules out. */
    boolean offer(Runnable task) {
        return tasks.offer(task);
    }

    private void run() {
        try {
            while (true) {
                Runnable task = tasks.take();
                try {
                    task.run();
                } catch (RuntimeException e) {
                    System.getLogger(SessionAgent.class.getName()).log(System.Logger.Level.WARNING,
                            thread.getName() + ": a task failed", e);
                }
            }
        } catch (InterruptedException e) {
            // stopped: the session is ending, what is still queued is not served
        }
    }

    boolean isAgentThread() {
        return Thread.currentThread() == thread;
    }

    /** Stops the thread after its current task and waits for it (unless called from it). */
    void stop() {
        thread.interrupt();
        if (!isAgentThread() && thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
