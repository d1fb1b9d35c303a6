package io.mooring.verbs;

/** The Linux errno values verbs calls report, by name (x86_64 numbering). */
public enum Errno {
    EPERM(1), ENOENT(2), EINTR(4), EIO(5), ENXIO(6), EAGAIN(11), ENOMEM(12), EACCES(13), EFAULT(14), EBUSY(16),
    EEXIST(17), ENODEV(19), EINVAL(22), ENFILE(23), EMFILE(24), ENOSPC(28), ERANGE(34), ENOSYS(38),
    EPROTO(71), EOPNOTSUPP(95), ECONNREFUSED(111), ETIMEDOUT(110), ECONNRESET(104);

    private final int number;

    Errno(int number) {
        this.number = number;
    }

    public int number() {
        return number;
    }

    /** {@code ENOMEM (12)}, or {@code errno 123} for numbers not listed here. */
    public static String describe(int number) {
        for (Errno e : values()) if (e.number == number) return e.name() + " (" + number + ")";
        return "errno " + number;
    }
}
