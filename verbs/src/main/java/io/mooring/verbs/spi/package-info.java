/**
 * The provider SPI: the small ops tables a provider implements (as UCX's {@code uct} or libfabric's provider
 * ops), one per verbs object. The public API in {@code io.mooring.verbs} owns everything common — argument
 * checks, QP state rules, lifecycle ordering, in-flight tracking, completion dispatch — so a provider only
 * translates calls: {@code ibv} into rdma-core verbs through FFM, {@code soft} into its pure-Java NIC.
 *
 * <p>Values cross this boundary in verbs encoding ({@code IBV_*} codes and bit masks, raw addresses and keys),
 * so an FFM provider can copy them into native structs as they are; their types are those of
 * {@code io.mooring.verbs.values} (a request as a {@link io.mooring.verbs.values.SendWr} or
 * {@link io.mooring.verbs.values.RecvWr} view), never the objects of {@code io.mooring.verbs}, which wrap this SPI.
 * A provider reports failures as {@link io.mooring.verbs.VerbsException} with the verb and errno. Providers are found
 * with {@link java.util.ServiceLoader}.
 */
package io.mooring.verbs.spi;
