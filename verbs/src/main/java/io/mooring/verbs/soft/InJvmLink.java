package io.mooring.verbs.soft;

/** Requester and responder in one device: the responder runs on the requester's thread. */
final class InJvmLink implements Link {
    private final SoftDevice device;
    private final int peerQpn;
    private SoftQp peer; // the peer QP found last, looked up again once destroyed: a lookup boxes its number

    InJvmLink(SoftDevice device, int peerQpn) {
        this.device = device;
        this.peerQpn = peerQpn;
    }

    @Override
    public Wire.Response exchange(Wire.Request request, long timeoutNanos) {
        SoftQp p = peer;
        if (p == null || p.isDestroyed()) peer = p = device.qp(peerQpn);
        return p == null ? Wire.Response.DROPPED : p.respond(request, null);
    }

    @Override
    public void close() {}
}
