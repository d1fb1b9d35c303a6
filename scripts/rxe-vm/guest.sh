#!/bin/bash
# Second stage of the rxe VM, run as PID 1 by the initramfs after switch_root (copied into the per-run
# control share by scripts/rxe-vm.sh; the host's bash, kmod, iproute2 and rdma-core are used as they are).
#
# Contract with the host (all files in the control share, /run/mooring here):
#   env      KEY=VALUE lines (bash-quoted) describing the run: kernel, shares to mount, hostname
#   command  a bash script that sets the command's environment, cds and execs the command
#   status   written by us: the command's exit status (its presence means "the command ran")
#   error    written by us instead of status when the VM could not be set up: "step: reason"
# The command's stdout/stderr go to two virtio serial ports that the host streams to its own.

# No `set -e`: PID 1 must never exit by accident (the kernel would panic); every failure goes through fail().
set -uo pipefail
# The initramfs leaves PATH=/bin; the tools we need (modprobe, rdma) live in sbin.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

readonly CTL=/run/mooring
step=start

say() {
  local up _
  read -r up _ </proc/uptime
  echo "rxe-vm guest [${up}s]: $*" >&2
}
begin() { step=$1; say "$step"; }

power_off() {
  sync
  # sysrq-o powers off at once, without an init system to talk to; qemu then exits.
  echo o >/proc/sysrq-trigger
  sleep 60
}

fail() {
  say "FAILED at '$step': $*"
  printf '%s: %s\n' "$step" "$*" >"$CTL/error"
  power_off
}

# Mounting uses the host's static busybox: under TCG, exec'ing a dynamically linked tool (ld.so and its
# libraries read over 9p) costs ~0.2 s each, and these run on every boot.
mount() { busybox mount "$@"; }
mount9p() { mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 "$@"; }

begin "read run description"
# shellcheck source=/dev/null
source "$CTL/env" || fail "cannot read $CTL/env"

begin "mount shares"
# The project and ~/.m2 are separate read-write 9p shares mounted over the same paths, so writes there land
# on the host (uncached, so the host sees them at once) while the rest of / stays a throw-away overlay.
mount9p proj "$RXE_PROJECT" || fail "mount project share at $RXE_PROJECT"
if [[ -n $RXE_M2 ]]; then
  mount9p m2 "$RXE_M2" || fail "mount ~/.m2 share at $RXE_M2"
fi
# /tmp stays the overlay's view of the host's /tmp on purpose: the project, ~/.m2 or the kernel cache may
# live there. /dev is a fresh devtmpfs and lacks shm and pts.
busybox mkdir -p /dev/shm /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm || fail "mount /dev/shm"
mount -t devpts devpts /dev/pts || fail "mount /dev/pts"
# Same hostname as the host, so code that resolves its own name finds it in the (shared) /etc/hosts.
echo "$RXE_HOSTNAME" >/proc/sys/kernel/hostname

begin "link kernel modules"
# The host has no module tree for the guest kernel; point the standard path at the unpacked package in
# the cache (visible through the root share), so plain modprobe works.
busybox mkdir -p /usr/lib/modules || fail "mkdir /usr/lib/modules"
busybox ln -sfn "$RXE_MODULES" "/usr/lib/modules/$RXE_KVER" || fail "symlink $RXE_MODULES"

begin "find output ports"
out='' err=''
for ((i = 0; i < 100; i++)); do
  for port in /sys/class/virtio-ports/*; do
    [[ -r $port/name ]] || continue
    case $(<"$port/name") in
      mooring.stdout) out=/dev/${port##*/} ;;
      mooring.stderr) err=/dev/${port##*/} ;;
    esac
  done
  [[ -c $out && -c $err ]] && break
  sleep 0.1
done
[[ -c $out && -c $err ]] || fail "virtio ports mooring.stdout/mooring.stderr not found"

begin "bring up lo"
ip link set lo up || fail "ip link set lo up"

begin "modprobe rdma_rxe"
modprobe -a rdma_rxe ib_uverbs || fail "modprobe -a rdma_rxe ib_uverbs"

begin "rdma link add rxe0"
rdma link add rxe0 type rxe netdev lo || fail "rdma link add rxe0 type rxe netdev lo"

begin "wait for rxe0"
# The device and its GIDs appear asynchronously. Poll sysfs first (cheap; every exec of a dynamically linked
# tool costs a lot under TCG), then confirm with ibv_devices, which is what users' code will see.
# Raw RoCE v2 on lo uses GID index 1 (::ffff:127.0.0.1); it is filled in shortly after the device appears.
gid1=/sys/class/infiniband/rxe0/ports/1/gids/1
for ((i = 0; i < 300; i++)); do
  [[ -r $gid1 && $(<"$gid1") != 0000:0000:0000:0000:0000:0000:0000:0000 ]] && break
  sleep 0.1
done
for ((i = 0; i < 30; i++)); do
  ibv_devices 2>/dev/null | grep -qw rxe0 && break
  sleep 1
done
ibv_devices 2>/dev/null | grep -qw rxe0 || fail "ibv_devices does not list rxe0"

begin "run command"
# Registering memory pins it; root may, but make the limit explicit for anything that checks it.
ulimit -l unlimited
env -i /bin/bash "$CTL/command" </dev/null >"$out" 2>"$err"
status=$?
say "command exited with status $status"
echo "$status" >"$CTL/status" || fail "cannot write $CTL/status"
power_off
