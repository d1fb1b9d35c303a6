package io.mooring.allocator;

/**
 * What an arena keeps per calling thread: the shard it was assigned, the inbox of its confined blocks closed
 * elsewhere, and its thread cache (null for virtual threads or when caching is off).
 */
record Caller(Thread thread, Shard shard, Inbox inbox, ThreadCache cache) {}
