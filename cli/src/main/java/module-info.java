/** The {@code mooring} command: demo, kv, pingpong, devices, lifecycle-demo. */
module io.mooring.cli {
    requires io.mooring.lease;
    requires io.mooring.examples;
    // Mooring logs through System.Logger; with java.logging resolved the JDK routes it there, where Main sets the
    // one-line format of the terminal.
    requires java.logging;
}
