package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callAddress;
import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvCalls.callVoid;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.AsyncEventSink;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.spi.VerbsProvider;
import io.mooring.verbs.values.DeviceInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The {@code ibv} provider: rdma-core's {@code libibverbs.so.1} through FFM (real NICs, Soft-RoCE). Nothing
 * native is touched until a method is called, and a machine without libibverbs or without RDMA support gets a
 * {@link VerbsException} that says so (ENOSYS: load rdma_rxe or use {@code mooring.provider=soft}), never a
 * crash; {@link io.mooring.verbs.RdmaDevices} then falls back to {@code soft} under {@code auto}.
 */
@SuppressWarnings("restricted") // reads structs at the pointers libibverbs returns; native access is this module's
public final class IbvProvider implements VerbsProvider {

    @Override
    public String name() {
        return "ibv";
    }

    /** Opens each device to describe it (attributes, ports, GID tables), and closes it again. */
    @Override
    public List<DeviceInfo> devices() {
        return withDeviceList(devices -> {
            List<DeviceInfo> infos = new ArrayList<>();
            for (Device d : devices) {
                MemorySegment ctx = openDevice(d);
                try {
                    infos.add(IbvContext.describe(ctx, d.name()));
                } finally {
                    closeDevice(ctx, d.name());
                }
            }
            return infos;
        });
    }

    @Override
    public ContextOps open(String deviceName, AsyncEventSink events) {
        MemorySegment ctx = withDeviceList(devices -> {
            for (Device d : devices) {
                if (d.name().equals(deviceName)) return openDevice(d); // the context keeps its device referenced
            }
            throw new IllegalArgumentException("no ibv device named '" + deviceName + "'; devices: "
                    + devices.stream().map(Device::name).toList());
        });
        try {
            return new IbvContext(ctx, deviceName, events);
        } catch (RuntimeException | Error e) {
            closeDevice(ctx, deviceName);
            throw e;
        }
    }

    /**
     * Bytes of native memory the provider itself holds now (work-request templates, completion arrays, attribute
     * structs of live objects) — not the memory rdma-core and the driver allocate. Zero once every context is closed.
     */
    public static long nativeBytesInUse() {
        return NativeBlock.liveBytes();
    }

    // ---------------------------------------------------------------------------------------------------------

    private record Device(String name, MemorySegment pointer) {}

    static void requireLibrary() {
        if (Ibv.UNAVAILABLE != null) {
            throw new VerbsException("dlopen", 0, Ibv.LIBRARY, Ibv.UNAVAILABLE);
        }
    }

    /** Runs {@code use} on the device list and frees it (never passing NULL to ibv_free_device_list). */
    private static <T> T withDeviceList(Function<List<Device>, T> use) {
        requireLibrary();
        MemorySegment list;
        int count;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment num = arena.allocate(JAVA_INT);
            list = callAddress(Ibv.GET_DEVICE_LIST, Ibv.errnoState(), num);
            if (list.equals(MemorySegment.NULL)) {
                throw IbvErrors.fail("ibv_get_device_list", Ibv.errno(), "this host");
            }
            count = num.get(JAVA_INT, 0);
        }
        try {
            MemorySegment entries = list.reinterpret(ADDRESS.byteSize() * (count + 1L));
            List<Device> devices = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                MemorySegment device = entries.getAtIndex(ADDRESS, i);
                MemorySegment name = callAddress(Ibv.GET_DEVICE_NAME, device);
                devices.add(new Device(Ibv.string(name), device));
            }
            return use.apply(devices);
        } finally {
            callVoid(Ibv.FREE_DEVICE_LIST, list);
        }
    }

    private static MemorySegment openDevice(Device d) {
        MemorySegment ctx = callAddress(Ibv.OPEN_DEVICE, Ibv.errnoState(), d.pointer());
        if (ctx.equals(MemorySegment.NULL)) throw IbvErrors.fail("ibv_open_device", Ibv.errno(), d.name());
        return ctx.reinterpret(IbvStructs.CONTEXT.byteSize());
    }

    static void closeDevice(MemorySegment ctx, String name) {
        int rc = callInt(Ibv.CLOSE_DEVICE, Ibv.errnoState(), ctx);
        if (rc != 0) throw IbvErrors.fail("ibv_close_device", errnoOf(rc), name);
    }

    /** The errno of a verb that returned {@code rc != 0}: the value itself if positive, else the captured errno. */
    static int errnoOf(int rc) {
        if (rc > 0) return rc;
        int e = Ibv.errno();
        return e != 0 ? e : -rc;
    }
}
