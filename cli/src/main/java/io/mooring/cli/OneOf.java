package io.mooring.cli;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * An option whose value is one of a few names, each standing for a {@code T}: as the option's converter it refuses any
 * other naming them all, as its completion candidates it lists them (help and shell completion). A subclass per
 * option names the choices: picocli builds both from the class.
 */
abstract class OneOf<T> implements ITypeConverter<T>, Iterable<String> {
    private final Map<String, T> byName = new LinkedHashMap<>();

    /** The choices {@code values}, each named by its {@code toString()}, or an enum constant by {@link #name}. */
    OneOf(List<T> values) {
        for (T v : values) byName.put(v instanceof Enum<?> e ? name(e) : v.toString(), v);
    }

    /** How an option names a constant of an enum: {@code WRITE_IMM} is {@code write-imm}. */
    static String name(Enum<?> constant) {
        return constant.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    @Override
    public T convert(String value) {
        T chosen = byName.get(value);
        if (chosen == null) {
            throw new TypeConversionException("'" + value + "' is not one of " + String.join(", ", byName.keySet()));
        }
        return chosen;
    }

    @Override
    public Iterator<String> iterator() {
        return byName.keySet().iterator();
    }
}
