package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.DeviceInfo;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.PortAttributes;
import io.mooring.verbs.values.SgeList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One soft NIC: its key and QP number spaces and its port on the fabric. The port is a TCP listener; its
 * address is the port's GID (IPv4-mapped) and its TCP port number is the port's LID — LIDs address ports on
 * an InfiniBand subnet, which is the role the TCP port plays here — so a {@link io.mooring.verbs.QpInfo} alone
 * tells a peer how to reach a QP. A device lives as long as the JVM, like a NIC in a machine.
 */
final class SoftDevice {
    /** Limits of the size a NIC has; READ/atomic depths as rxe's (the requester runs one request at a time anyway). */
    static final DeviceAttributes ATTRIBUTES = DeviceAttributes.builder().maxMrSize(Long.MAX_VALUE).maxQp(1 << 16)
            .maxQpWr(1 << 14).maxSge(SgeList.CAPACITY).maxCq(1 << 16).maxCqe(1 << 20).maxMr(1 << 20)
            .maxMw(1 << 16).maxQpRdAtom(128).maxQpInitRdAtom(128)
            .maxSrq(1 << 16).maxSrqWr(1 << 14).maxSrqSge(SgeList.CAPACITY).atomics(true)
            .windowTypes(Set.of(MwType.TYPE_1, MwType.TYPE_2)).maxInlineData(256).ports(1).build();
    private static final Map<String, SoftDevice> DEVICES = new ConcurrentHashMap<>();
    /** Bytes registered by all soft devices: what the locked-memory limit counts, per process as the kernel does. */
    private static final AtomicLong PINNED = new AtomicLong();

    final String name;
    /** What each key names: its MRs and MWs. */
    final KeyTable keys;
    private final Map<Integer, SoftQp> qps = new ConcurrentHashMap<>();
    private final AtomicInteger qpNumbers = new AtomicInteger(0x10);
    private final AtomicInteger objectIds = new AtomicInteger();
    final TcpFabric fabric;

    private SoftDevice(String name, int index) {
        this.name = name;
        this.keys = new KeyTable(name);
        this.fabric = TcpFabric.listen(this, index);
    }

    static SoftDevice get(String name, int index) {
        return DEVICES.computeIfAbsent(name, n -> new SoftDevice(n, index));
    }

    Gid gid() {
        return Gid.of(fabric.address());
    }

    int lid() {
        return fabric.port();
    }

    PortAttributes port() {
        return new PortAttributes(1, true, Mtu.MTU_4096, lid(), "TCP", List.of(gid()), 1); // P_Key 0xffff only
    }

    DeviceInfo info() {
        return new DeviceInfo("soft", name, ATTRIBUTES, List.of(port()));
    }

    /**
     * Counts {@code bytes} as pinned, or refuses with ENOMEM and the memlock hint if that would pass
     * {@value SoftProvider#MEMLOCK_PROPERTY}.
     */
    static void pin(long bytes, String object) {
        long limit = Long.getLong(SoftProvider.MEMLOCK_PROPERTY, Long.MAX_VALUE);
        long now = PINNED.addAndGet(bytes);
        if (now > limit) {
            PINNED.addAndGet(-bytes);
            throw new VerbsException("ibv_reg_mr", Errno.ENOMEM.number(), object, VerbsException.MEMLOCK_HINT
                    + " (" + bytes + " more bytes would make " + now + ", above the limit of " + limit + " set by -D"
                    + SoftProvider.MEMLOCK_PROPERTY + ")");
        }
    }

    static void unpin(long bytes) {
        PINNED.addAndGet(-bytes);
    }

    int newQpNumber() {
        return qpNumbers.getAndIncrement() & 0xff_ffff;
    }

    int newObjectId() {
        return objectIds.incrementAndGet();
    }

    void register(SoftQp qp) {
        qps.put(qp.qpNumber(), qp);
    }

    void unregister(SoftQp qp) {
        qps.remove(qp.qpNumber(), qp);
    }

    Collection<SoftQp> qps() {
        return qps.values();
    }

    SoftQp qp(int qpn) {
        return qps.get(qpn);
    }

    /** Whether {@code gid}/{@code lid} name this device's port. */
    boolean isSelf(Gid gid, int lid) {
        return lid == lid() && gid.equals(gid());
    }
}
