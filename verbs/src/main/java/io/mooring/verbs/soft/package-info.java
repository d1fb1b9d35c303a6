/**
 * The {@code soft} provider: a NIC written in Java. It keeps the semantics tests rely on — keys checked on every
 * access, access rights, memory window bind/invalidate, QP states, RC ordering, RNR retries, error completions
 * and flushes — so that code tested against it behaves the same on a real device. QPs in one device talk
 * directly ({@link io.mooring.verbs.soft.InJvmLink}); QPs on different devices or processes talk over one TCP
 * connection per connected pair ({@link io.mooring.verbs.soft.TcpLink}), where the target's provider thread
 * executes READ, WRITE and atomics against its registered memory, as rxe does in the kernel. A
 * {@link io.mooring.verbs.testing.FaultPlan} makes either link lossy on purpose ({@link io.mooring.verbs.soft.FaultInjector}).
 */
package io.mooring.verbs.soft;
