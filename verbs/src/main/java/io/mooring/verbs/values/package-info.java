/**
 * The values the verbs objects and their providers both speak: access rights, opcodes, QP states, attributes and
 * capabilities, device and port descriptions, and the view a provider has of a work request. Kept apart from the
 * objects ({@code io.mooring.verbs}) so that the provider SPI depends on these alone, and the objects on the SPI.
 */
package io.mooring.verbs.values;
