package io.mooring.verbs.values;

/** Path MTU ({@code enum ibv_mtu}). */
public enum Mtu {
    MTU_256(1, 256), MTU_512(2, 512), MTU_1024(3, 1024), MTU_2048(4, 2048), MTU_4096(5, 4096);

    private final int code;
    private final int bytes;

    Mtu(int code, int bytes) {
        this.code = code;
        this.bytes = bytes;
    }

    public int code() {
        return code;
    }

    public int bytes() {
        return bytes;
    }

    /** The MTU of verbs code {@code code} ({@code IBV_MTU_*}). */
    public static Mtu of(int code) {
        for (Mtu m : values()) if (m.code == code) return m;
        throw new IllegalArgumentException("no MTU has verbs code " + code);
    }

    /**
     * The MTU of {@code bytes} bytes, as a configuration or {@code ibv_devinfo} states it.
     *
     * @throws IllegalArgumentException if {@code bytes} is not one of 256, 512, 1024, 2048, 4096
     */
    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) if (m.bytes == bytes) return m;
        throw new IllegalArgumentException("no MTU is " + bytes + " bytes; path MTUs are 256, 512, 1024, 2048 or 4096");
    }
}
