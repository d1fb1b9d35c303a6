package io.mooring.verbs.ibv;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;

/** Turns an errno from a verb into a {@link VerbsException} that says what to do about it. */
final class IbvErrors {
    static final String NO_RDMA = "no RDMA support in this kernel: load rdma_rxe (Soft-RoCE) or use mooring.provider=soft";

    private IbvErrors() {}

    /** A failure with the standard hint for {@code errno} (see {@link #hint}). */
    static VerbsException fail(String verb, int errno, String object) {
        return new VerbsException(verb, errno, object, hint(verb, errno, ""));
    }

    /** A failure with the standard hint for {@code errno}, plus {@code detail}. */
    static VerbsException fail(String verb, int errno, String object, String detail) {
        return new VerbsException(verb, errno, object, hint(verb, errno, detail));
    }

    static String hint(String verb, int errno, String detail) {
        String standard = switch (Errno.describe(errno).split(" ")[0]) {
            case "ENOSYS" -> NO_RDMA;
            case "ENOMEM" -> verb.equals("ibv_reg_mr") ? VerbsException.MEMLOCK_HINT
                    : "the device or the kernel ran out of resources for this object";
            case "EPERM", "EACCES" -> "no permission to use the RDMA device: check the access rights of"
                    + " /dev/infiniband/uverbs* (group rdma) and the locked-memory limit";
            case "EOPNOTSUPP" -> "the device or its driver does not support this";
            case "ENODEV" -> "the device is gone (driver unloaded or the link removed)";
            case "EBUSY" -> "objects created from it are still alive";
            case "EFAULT" -> "the memory is not mapped (freed, or not accessible to the device)";
            default -> "";
        };
        if (detail.isEmpty()) return standard;
        return standard.isEmpty() ? detail : standard + " (" + detail + ")";
    }
}
