/** The {@code mooring} command: demo, kv, netty-echo, pagestore, pingpong, devices, lifecycle-demo, completion. */
module io.mooring.cli {
    requires io.mooring.lease;
    requires io.mooring.examples;
    requires info.picocli;
    // Mooring logs through System.Logger; with java.logging resolved the JDK routes it there, where Main sets the
    // one-line format of the terminal.
    requires java.logging;
    // picocli sets the commands' option fields and calls their methods by reflection.
    opens io.mooring.cli to info.picocli;
}
