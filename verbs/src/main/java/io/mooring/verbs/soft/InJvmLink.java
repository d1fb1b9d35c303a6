package io.mooring.verbs.soft;

/** Requester and responder in one device: the responder runs on the requester's thread. */
final class InJvmLink implements Link {
    private final SoftDevice device;
    private final int peerQpn;

    InJvmLink(SoftDevice device, int peerQpn) {
        this.device = device;
        this.peerQpn = peerQpn;
    }

    @Override
    public Wire.Response exchange(Wire.Request request, long timeoutNanos) {
        SoftQp peer = device.qp(peerQpn);
        return peer == null ? Wire.Response.DROPPED : peer.respond(request, null);
    }

    @Override
    public void close() {}
}
