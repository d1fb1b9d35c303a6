package io.mooring.cli;

import java.net.InetSocketAddress;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** An option's {@code HOST:PORT} value (an IPv6 host in brackets), unresolved: the command resolves it to dial. */
final class HostPort implements ITypeConverter<InetSocketAddress> {
    @Override
    public InetSocketAddress convert(String value) {
        int colon = value.lastIndexOf(':');
        String host = colon < 0 ? "" : value.substring(0, colon).replaceAll("^\\[(.*)]$", "$1");
        if (host.isEmpty()) throw new TypeConversionException("'" + value + "' is not HOST:PORT");
        String port = value.substring(colon + 1);
        try {
            int p = Integer.parseInt(port);
            if (p >= 1 && p <= 65535) return InetSocketAddress.createUnresolved(host, p);
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new TypeConversionException("'" + value + "' needs a port from 1 to 65535, not '" + port + "'");
    }
}
