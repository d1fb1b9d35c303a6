#!/usr/bin/env bash
# rxe-vm.sh - run one command as root inside a throw-away qemu VM that has real RDMA verbs
# (Soft-RoCE: rdma_rxe, device rxe0 on lo).
#
#   scripts/rxe-vm.sh [--timeout SECONDS] [--mem SIZE] [--mttcg] [--verbose] -- COMMAND [ARGS...]
#
# Why a VM: the host kernel has no RDMA support, but Debian's stock kernel has rdma_rxe. The VM boots that
# kernel (unpacked into a cache, never installed) over the host's own root filesystem, shared read-only
# with a tmpfs overlay, so the host's JDK, rdma-core and tools run unchanged inside. The project directory
# (git top level of the current directory, else the current directory) and ~/.m2 are shared read-write at
# the same paths; COMMAND runs in the current directory with the caller's environment plus MOORING_RXE=1 and
# MOORING_RXE_ACCEL (the accelerator: tcg,thread=single, tcg or kvm).
# The VM has no network: build and resolve dependencies on the host first (inside, use `mvn -o`).
# It runs under TCG (KVM only where kvm_intel/kvm_amd is loaded), vCPUs in turn unless --mttcg: see the
# comment at the accelerator choice below for why that is the safe default for Java.
#
# COMMAND's stdout and stderr are streamed live to ours; our exit status is COMMAND's. Our own failures
# use 124 (timeout, as timeout(1) does) and 125 (could not prepare or boot the VM), with a message that
# names the step and the log to read. See scripts/rxe-vm/ for the guest side.
#
# Environment: MOORING_CACHE (default ~/.cache/mooring) holds the unpacked kernel and the initramfs.

set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"   # depmod, modprobe and friends live in sbin

SELF_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
readonly GUEST_DIR=$SELF_DIR/rxe-vm
readonly CACHE=${MOORING_CACHE:-$HOME/.cache/mooring}/rxe-vm
readonly SETUP_LOG=$CACHE/setup.log
readonly PACKAGES=(qemu-system-x86 busybox-static cpio kmod iproute2 rdma-core ibverbs-providers
  ibverbs-utils libibverbs-dev perftest xz-utils)
# What the initramfs needs before it can reach the host's root: PCI virtio, 9p over virtio, overlayfs,
# and virtio serial ports for the command's output. Their dependencies are added automatically.
readonly INITRD_MODULES=(virtio_pci 9pnet_virtio 9p overlay virtio_console)
# Host variables that describe the host session rather than the work, and would mislead inside the VM.
readonly ENV_DENY='^(PWD|OLDPWD|SHLVL|_|DISPLAY|WAYLAND_DISPLAY|XAUTHORITY|XDG_RUNTIME_DIR|'\
'XDG_SESSION_.*|DBUS_.*|SSH_.*|TMUX.*)$'

timeout_s=1800
mem=4G
mttcg=0
verbose=0
# State filled in by the steps below; global so that the EXIT trap sees it too.
command_argv=() cwd='' project='' m2='' kver='' kdir='' fetch_tmp='' kernel_image='' initrd=''
run='' share='' keep_run=0 qemu=() accel_name='' qemu_pid='' out_pid='' err_pid='' qemu_rc=0

usage() {
  cat <<'EOF'
Usage: scripts/rxe-vm.sh [--timeout SECONDS] [--mem SIZE] [--mttcg] [--verbose] -- COMMAND [ARGS...]

Runs COMMAND as root in a qemu VM with Soft-RoCE (rxe0 on lo), in the current directory, and exits
with its status. The project directory and ~/.m2 are writable from inside; the rest of / is a
throw-away overlay of the host's root. The VM has no network.

  --timeout SECONDS  bound on the VM run, boot included (default 1800); exit 124 when exceeded
  --mem SIZE         guest memory, qemu syntax (default 4G)
  --mttcg            multi-threaded TCG: vCPUs run in parallel (µs round trips between busy-polling
                     processes, e.g. ib_write_lat) but JIT-compiled Java crashes within minutes;
                     for C tools only. The default runs the vCPUs in turn, which is safe for Java.
  --verbose, -v      report the steps and print the guest console log afterwards
Exit status: COMMAND's; 124 on timeout; 125 if the VM could not be prepared or booted.
EOF
}

msg() { printf 'rxe-vm: %s\n' "$*" >&2; }
note() { if ((verbose)); then msg "$@"; fi; }
die() { msg "error: $*"; exit 125; }

# Run a preparation step with its output in the setup log, bounded in time; on failure say which step
# failed and where to look, instead of letting set -e exit silently.
step() {
  local what=$1 secs=$2 rc=0
  shift 2
  note "$what"
  printf '\n=== %s  %s\n' "$(date '+%F %T')" "$*" >>"$SETUP_LOG"
  # --foreground keeps the step in our process group, so Ctrl-C reaches it instead of being swallowed.
  timeout --foreground -k 10 "$secs" "$@" </dev/null >>"$SETUP_LOG" 2>&1 || rc=$?
  if ((rc == 124 || rc == 137)); then
    die "$what timed out after ${secs}s (log: $SETUP_LOG)"
  elif ((rc != 0)); then
    die "$what failed with exit status $rc (log: $SETUP_LOG)"
  fi
}

apt_updated=0
apt_update() {
  if ((apt_updated == 0)); then
    step "apt-get update" 600 apt-get update
    apt_updated=1
  fi
}

ensure_packages() {
  local p missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  ((EUID == 0)) || die "missing packages: ${missing[*]} (run as root, or: apt-get install ${missing[*]})"
  msg "installing ${missing[*]} (first run only)"
  apt_update
  step "apt-get install" 1800 env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}

# The kernel package that linux-image-amd64 currently points at, e.g. linux-image-6.1.0-56-amd64.
kernel_package() {
  local deps
  deps=$(apt-cache depends linux-image-amd64 2>/dev/null) || return 0
  awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }' <<<"$deps"
}

# Download and unpack kernel package $1 into $kdir (not installed: dpkg-deb -x), with modules.dep built.
# Called in a subshell so that a failure (die) can fall back to an older cached kernel.
fetch_kernel() {
  local pkg=$1 deb
  msg "fetching and unpacking $pkg (first run only)"
  # A global, not a local: the EXIT trap runs after this function has returned. We are in a subshell,
  # so neither the variable nor the trap leaks into the caller.
  fetch_tmp=$(mktemp -d "$CACHE/tmp.kernel.XXXXXX") || die "cannot create a directory in $CACHE"
  trap 'rm -rf "$fetch_tmp"' EXIT
  step "apt-get download $pkg" 1800 env -C "$fetch_tmp" apt-get download "$pkg"
  deb=$(find "$fetch_tmp" -maxdepth 1 -name '*.deb' -print -quit)
  [[ -n $deb ]] || die "apt-get download $pkg produced no .deb (log: $SETUP_LOG)"
  step "unpack $pkg" 900 dpkg-deb -x "$deb" "$fetch_tmp/tree"
  rm -f "$deb"
  # depmod -b looks under BASE/lib/modules; newer packages ship usr/lib/modules only.
  if [[ ! -e $fetch_tmp/tree/lib && -d $fetch_tmp/tree/usr/lib/modules ]]; then
    ln -s usr/lib "$fetch_tmp/tree/lib"
  fi
  [[ -f $fetch_tmp/tree/boot/vmlinuz-$kver && -d $fetch_tmp/tree/lib/modules/$kver ]] \
    || die "$pkg has no boot/vmlinuz-$kver or lib/modules/$kver"
  step "depmod $kver" 600 depmod -b "$fetch_tmp/tree" "$kver"
  if ! { rm -rf "$kdir" && mv "$fetch_tmp/tree" "$kdir" && rmdir "$fetch_tmp" \
    && touch "$kdir/.complete"; }; then
    die "cannot move the unpacked kernel to $kdir"
  fi
}

# Sets kver and kdir: the kernel linux-image-amd64 names (fetched on first use), or failing that the
# newest one already in the cache, so that a later `apt-get update` naming a new kernel does not break
# runs on a machine that cannot download it right now.
prepare_kernel() {
  local pkg cached
  cached=$(find "$CACHE" -maxdepth 2 -name .complete -path "$CACHE/kernel-*" -printf '%h\n' 2>/dev/null \
    | sort -V | tail -n 1)
  pkg=$(kernel_package)
  if [[ -z $pkg && -z $cached ]]; then
    apt_update # no package lists yet (a cleaned image)
    pkg=$(kernel_package)
  fi
  if [[ -n $pkg ]]; then
    kver=${pkg#linux-image-}
    kdir=$CACHE/kernel-$kver
    [[ -f $kdir/.complete ]] && return
    (fetch_kernel "$pkg") && return
    [[ -n $cached ]] || die "no guest kernel to boot (fetching $pkg failed, see above)"
    msg "using the cached kernel ${cached##*/kernel-} instead"
  elif [[ -z $cached ]]; then
    die "apt-cache depends linux-image-amd64 names no kernel package (log: $SETUP_LOG)"
  fi
  kdir=$cached
  kver=${cached##*/kernel-}
}

# Sets kernel_image. Under TCG, decompressing Debian's xz-compressed bzImage takes ~9 s of every boot;
# qemu can boot the uncompressed vmlinux directly through its PVH entry point, so unpack it once and use
# that whenever the kernel supports PVH. Falls back to the bzImage if anything about this is unexpected.
prepare_vmlinux() {
  local bz=$kdir/boot/vmlinuz-$kver vm=$kdir/boot/vmlinux-$kver setup_sects payload_offset
  kernel_image=$bz
  if [[ -s $vm ]]; then kernel_image=$vm; return; fi
  grep -qx 'CONFIG_PVH=y' "$kdir/boot/config-$kver" 2>/dev/null || return 0
  grep -qx 'CONFIG_KERNEL_XZ=y' "$kdir/boot/config-$kver" || return 0
  # x86 boot protocol: the compressed payload starts payload_offset bytes into the protected-mode
  # code, which follows the (setup_sects + 1) 512-byte sectors of real-mode setup.
  setup_sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$bz" | tr -d ' ')
  payload_offset=$(od -An -tu4 -j $((0x248)) -N4 "$bz" | tr -d ' ')
  ((setup_sects > 0)) || setup_sects=4
  note "unpacking vmlinux from $bz"
  # --single-stream: the payload is followed by its 4-byte uncompressed size, which is not xz data (and
  # tail may then see EPIPE, hence `|| true`: xz's status and the ELF check below are what count).
  if { tail -c +$(((setup_sects + 1) * 512 + payload_offset + 1)) "$bz" 2>/dev/null || true; } \
    | xz -dc --single-stream >"$vm.tmp" 2>>"$SETUP_LOG" \
    && [[ $(head -c 4 "$vm.tmp") == $'\x7fELF' ]]; then
    mv "$vm.tmp" "$vm"
    kernel_image=$vm
  else
    rm -f "$vm.tmp"
    msg "note: could not unpack vmlinux from $bz; booting the compressed kernel (slower)"
  fi
}

# Sets initrd: busybox + the modules above + scripts/rxe-vm/init. The name carries a hash of its inputs,
# so editing init or the module list builds a new one, and an unchanged one is reused.
prepare_initramfs() {
  local hash tmp mod ko out verb dest n=0
  local -a kos=()
  [[ -x /bin/busybox ]] || die "/bin/busybox is missing (package busybox-static)"
  hash=$(cat "$GUEST_DIR/init" - <<<"$kver ${INITRD_MODULES[*]}" | sha256sum | cut -c1-16)
  initrd=$CACHE/initramfs-$kver-$hash.cpio.gz
  [[ -s $initrd ]] && return

  note "building $initrd"
  for mod in "${INITRD_MODULES[@]}"; do
    # "insmod PATH" lines in load order; built-in modules print "builtin NAME" and need nothing.
    out=$(modprobe -d "$kdir" -S "$kver" --show-depends "$mod" 2>>"$SETUP_LOG") \
      || die "modprobe --show-depends $mod failed for kernel $kver (log: $SETUP_LOG)"
    while read -r verb ko _; do
      [[ $verb == insmod ]] || continue
      [[ " ${kos[*]} " == *" $ko "* ]] || kos+=("$ko")
    done <<<"$out"
  done

  tmp=$(mktemp -d "$CACHE/tmp.initrd.XXXXXX")
  mkdir -p "$tmp"/{bin,dev,proc,sys,lower,upper,newroot,modules}
  cp /bin/busybox "$tmp/bin/busybox"
  install -m 0755 "$GUEST_DIR/init" "$tmp/init"
  for ko in "${kos[@]}"; do
    n=$((n + 1))
    dest=$tmp/modules/$(printf '%02d' "$n")-$(basename "${ko%%.ko*}").ko
    # busybox insmod wants plain ELF; decompress if the kernel ships compressed modules.
    case $ko in
      *.ko) cp "$ko" "$dest" ;;
      *.ko.xz) xz -dc "$ko" >"$dest" ;;
      *.ko.zst) zstd -qdc "$ko" >"$dest" ;;
      *.ko.gz) gzip -dc "$ko" >"$dest" ;;
      *) die "unexpected module file $ko" ;;
    esac
  done
  (cd "$tmp" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$initrd.tmp" \
    || die "building the initramfs failed"
  mv "$initrd.tmp" "$initrd"
  rm -rf "$tmp"
}

# qemu separates sub-options with commas; a literal comma in a path must be doubled.
qesc() { printf '%s' "${1//,/,,}"; }

parse_args() {
  while (($#)); do
    case $1 in
      --timeout) timeout_s=${2-}; shift 2 || { usage >&2; exit 2; } ;;
      --timeout=*) timeout_s=${1#*=}; shift ;;
      --mem) mem=${2-}; shift 2 || { usage >&2; exit 2; } ;;
      --mem=*) mem=${1#*=}; shift ;;
      --mttcg) mttcg=1; shift ;;
      -v | --verbose) verbose=1; shift ;;
      -h | --help) usage; exit 0 ;;
      --) shift; break ;;
      *) msg "unknown option: $1"; usage >&2; exit 2 ;;
    esac
  done
  (($#)) || { msg "no COMMAND given"; usage >&2; exit 2; }
  [[ $timeout_s =~ ^[1-9][0-9]*$ ]] || { msg "--timeout wants a positive number of seconds"; exit 2; }
  [[ $mem =~ ^[1-9][0-9]*[MGT]?$ ]] || { msg "--mem wants a size like 4G or 2048M"; exit 2; }
  command_argv=("$@")
}

# Sets cwd, project and m2: what the guest mounts read-write, at the same paths as here.
find_shares() {
  cwd=$(pwd -P)
  project=$(git -c safe.directory='*' -C "$cwd" rev-parse --show-toplevel 2>/dev/null || true)
  project=${project:-$cwd}
  [[ $project != / ]] || die "refusing to share / read-write; run from a project directory"
  m2=''
  if [[ -d $HOME/.m2 ]]; then
    m2=$(cd "$HOME/.m2" && pwd -P)
    # Already writable through the project share if it lies inside it.
    if [[ $m2/ == "$project"/* ]]; then m2=''; fi
  fi
}

# The control share's files; scripts/rxe-vm/guest.sh documents them.
write_control_share() {
  local name
  mkdir "$share"
  cp "$GUEST_DIR/guest.sh" "$share/guest.sh"
  {
    printf 'RXE_KVER=%q\n' "$kver"
    printf 'RXE_MODULES=%q\n' "$kdir/lib/modules/$kver"
    printf 'RXE_PROJECT=%q\n' "$project"
    printf 'RXE_M2=%q\n' "$m2"
    printf 'RXE_HOSTNAME=%q\n' "$(uname -n)"
  } >"$share/env"
  {
    printf '# generated by rxe-vm.sh: the environment, directory and command to run in the VM\n'
    while IFS= read -r name; do
      [[ $name =~ $ENV_DENY || ! -v $name ]] && continue
      printf 'export %s=%q\n' "$name" "${!name}"
    done < <(compgen -e)
    printf 'export MOORING_RXE=1 MOORING_RXE_ACCEL=%q\n' "$accel_name"
    printf 'cd -- %q || exit 125\n' "$cwd"
    printf 'exec'
    printf ' %q' "${command_argv[@]}"
    printf '\n'
  } >"$share/command"
}

# Sets qemu: the command line of the VM.
build_qemu_command() {
  local accel
  # Single-threaded TCG by default: with multi-threaded TCG (qemu 7.2, Debian 12's) the JDK crashes within
  # a minute or two of JIT-heavy work - one vCPU translates the entry of a method while another patches
  # it (the JIT's "make not entrant"), and the torn instruction faults; hs_err shows the half-patched
  # `jmp`. Single-threaded TCG cannot tear, at the price of running the vCPUs in turn: busy-polling
  # peers then see millisecond round trips instead of tens of microseconds. --mttcg trades the other
  # way, for C tools.
  if ((mttcg)); then
    accel=(-accel tcg -cpu max)
  else
    accel=(-accel "tcg,thread=single" -cpu max)
  fi
  # /dev/kvm alone is not enough: where it is backed by something other than kvm_intel/kvm_amd
  # (kvm_pvm here) a stock kernel boots far too slowly, so TCG is the safe default.
  if [[ -d /sys/module/kvm_intel || -d /sys/module/kvm_amd ]] && [[ -w /dev/kvm ]]; then
    accel=(-accel kvm -cpu host)
  fi
  accel_name=${accel[1]}

  qemu=(qemu-system-x86_64 "${accel[@]}" -smp 2 -m "$mem"
    -nodefaults -no-user-config -display none -no-reboot -nic none
    -kernel "$kernel_image" -initrd "$initrd"
    -append "console=ttyS0 quiet loglevel=0 panic=-1 mitigations=off"
    -chardev "file,id=console,path=$(qesc "$run/console.log")" -serial chardev:console
    # multidevs=remap: / spans several host filesystems, and 9p needs distinct inode numbers across them.
    -virtfs "local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$(qesc "$share"),mount_tag=ctl,security_model=none"
    -virtfs "local,path=$(qesc "$project"),mount_tag=proj,security_model=none,multidevs=remap"
    -device virtio-serial-pci
    -chardev "file,id=out,path=$(qesc "$run/stdout.fifo")"
    -device "virtserialport,chardev=out,name=mooring.stdout"
    -chardev "file,id=err,path=$(qesc "$run/stderr.fifo")"
    -device "virtserialport,chardev=err,name=mooring.stderr")
  if [[ -n $m2 ]]; then
    qemu+=(-virtfs "local,path=$(qesc "$m2"),mount_tag=m2,security_model=none,multidevs=remap")
  fi
}

# If our reader goes away (`rxe-vm.sh ... | head`), keep draining: a full fifo would stall qemu's vCPU,
# and the VM would hang until the timeout instead of finishing its command.
drain() { cat "$1" || cat "$1" >/dev/null; }

# Sets qemu_rc. COMMAND's output is streamed while the VM runs.
run_vm() {
  local out_hold err_hold start
  # qemu writes each virtio port into a fifo and a drain copies it to our stdout/stderr (sharing our file
  # offsets, so redirecting us to a file works as expected). We hold each fifo open read-write ourselves,
  # so neither side ever blocks in open() - even if qemu dies before opening its end - and the drains
  # see end-of-file exactly when we let go after qemu has exited.
  mkfifo "$run/stdout.fifo" "$run/stderr.fifo"
  exec {out_hold}<>"$run/stdout.fifo" {err_hold}<>"$run/stderr.fifo"
  drain "$run/stdout.fifo" {out_hold}>&- {err_hold}>&- &
  out_pid=$!
  drain "$run/stderr.fifo" >&2 {out_hold}>&- {err_hold}>&- &
  err_pid=$!

  note "booting VM ($accel_name, $kver, $mem), timeout ${timeout_s}s"
  start=$SECONDS
  # In the background so that our INT/TERM trap runs at once and takes qemu down with us.
  timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null >"$run/qemu.log" 2>&1 {out_hold}>&- {err_hold}>&- &
  qemu_pid=$!
  qemu_rc=0
  wait "$qemu_pid" || qemu_rc=$?
  qemu_pid=''
  exec {out_hold}>&- {err_hold}>&-
  wait "$out_pid" "$err_pid" || true
  out_pid='' err_pid=''
  note "VM ran for $((SECONDS - start))s"
}

# shellcheck disable=SC2317  # invoked through the EXIT trap
cleanup() {
  local pid
  for pid in $qemu_pid $out_pid $err_pid; do kill "$pid" 2>/dev/null || true; done
  if ((keep_run)); then msg "logs kept in $run"; else rm -rf "$run"; fi
}

failed() {
  keep_run=1
  msg "error: $*"
  if [[ -s $run/console.log ]]; then
    msg "console log: $run/console.log (last lines below); qemu log: $run/qemu.log"
    tail -n 15 "$run/console.log" | sed 's/^/  | /' >&2 || true
  else
    msg "the guest printed nothing (it never reached its init); qemu log: $run/qemu.log"
  fi
}

# Everything runs from here, so bash has parsed the whole file before it starts: editing the script
# while a long VM run is in progress cannot derail that run.
main() {
  parse_args "$@"
  find_shares

  mkdir -p "$CACHE"
  # Several runs may start at once; the first one prepares the cache, the others wait for it.
  exec {lock_fd}>"$CACHE/.lock"
  flock -w 3600 "$lock_fd" || die "could not lock $CACHE/.lock within an hour"
  ensure_packages
  prepare_kernel
  prepare_vmlinux
  prepare_initramfs
  exec {lock_fd}>&-

  # Per-run directory: share/ is the guest's control share; the fifos and logs stay on the host side.
  run=$(mktemp -d "${TMPDIR:-/tmp}/rxe-vm.XXXXXX")
  share=$run/share
  trap cleanup EXIT
  trap 'msg "interrupted"; exit 130' INT
  trap 'msg "terminated"; exit 143' TERM
  build_qemu_command
  write_control_share
  run_vm
  if ((verbose)); then sed 's/^/rxe-vm console: /' "$run/console.log" >&2 || true; fi

  if [[ -f $share/status ]]; then
    exit "$(<"$share/status")"
  elif ((qemu_rc == 124 || qemu_rc == 137)); then
    failed "timed out after ${timeout_s}s (raise it with --timeout)"
    exit 124
  elif [[ -f $share/error ]]; then
    failed "VM setup failed at step $(<"$share/error")"
    exit 125
  else
    failed "the VM stopped without running the command (qemu exit status $qemu_rc)"
    tail -n 5 "$run/qemu.log" | sed 's/^/  | qemu: /' >&2 || true
    exit 125
  fi
}

main "$@"
