package io.mooring.verbs;

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

    public static Mtu of(int code) {
        for (Mtu m : values()) if (m.code == code) return m;
        throw new IllegalArgumentException("no MTU has verbs code " + code);
    }
}
