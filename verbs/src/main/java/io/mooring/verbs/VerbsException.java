package io.mooring.verbs;

import io.mooring.lifecycle.MooringException;
import io.mooring.verbs.values.Access;

/**
 * A verbs operation failed. Carries what a person needs to act: the verb, the errno (number and name) or the
 * completion status, the object it was applied to, and a hint.
 */
public class VerbsException extends MooringException {
    private static final long serialVersionUID = 1L;

    private final String verb;
    private final int errno;
    private final String object;
    private final String hint;

    /** What ENOMEM from {@code ibv_reg_mr} means, from every provider. */
    public static final String MEMLOCK_HINT = "registering pins memory and counts against the locked-memory limit:"
            + " raise it (`ulimit -l`, memlock in /etc/security/limits.conf, LimitMEMLOCK= for a systemd service)"
            + " or register less";

    /** What an {@link IllegalCallerException} from FFM means: the JVM denies native access to Mooring. */
    public static final String NATIVE_ACCESS_HINT = "grant native access to the Mooring modules that call native code:"
            + " --enable-native-access=io.mooring.verbs,io.mooring.allocator on the module path,"
            + " --enable-native-access=ALL-UNNAMED on the class path (or Enable-Native-Access: ALL-UNNAMED in the"
            + " manifest of the application's executable jar)";

    /**
     * @param verb   the verb or operation, e.g. {@code ibv_reg_mr}
     * @param errno  the errno it returned, or 0 when the failure has none
     * @param object what it was applied to, e.g. {@code pd#3 on soft0}
     * @param hint   what to do about it; may be empty
     */
    public VerbsException(String verb, int errno, String object, String hint) {
        this(verb, errno, object, hint, null);
    }

    public VerbsException(String verb, int errno, String object, String hint, Throwable cause) {
        super(verb + " on " + object + " failed" + (errno != 0 ? " with " + Errno.describe(errno) : "")
                + (hint.isEmpty() ? "" : ": " + hint), cause);
        this.verb = verb;
        this.errno = errno;
        this.object = object;
        this.hint = hint;
    }

    /** The verb or operation that failed. */
    public String verb() {
        return verb;
    }

    /** The errno, or 0 if the failure carried none. */
    public int errno() {
        return errno;
    }

    /** The errno's name ({@code ENOMEM (12)}), or empty. */
    public String errnoName() {
        return errno == 0 ? "" : Errno.describe(errno);
    }

    /** What the verb was applied to. */
    public String object() {
        return object;
    }

    /** What to do about it. */
    public String hint() {
        return hint;
    }
}
