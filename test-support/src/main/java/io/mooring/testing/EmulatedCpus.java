package io.mooring.testing;

/**
 * Whether the tests run on emulated CPUs: {@code scripts/rxe-vm.sh} under TCG, whose vCPUs run in turn (one at a time
 * unless {@code --mttcg}), so that round trips take milliseconds. Shares of timing-dependent outcomes swing widely
 * there; a test asks for the mechanism only, and for its usual share elsewhere.
 */
public final class EmulatedCpus {
    private EmulatedCpus() {
    }

    /** True inside the rxe VM under TCG (the VM exports its accelerator as {@code MOORING_RXE_ACCEL}). */
    public static boolean inUse() {
        return String.valueOf(System.getenv("MOORING_RXE_ACCEL")).startsWith("tcg");
    }
}
