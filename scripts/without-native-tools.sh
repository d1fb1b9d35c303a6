#!/usr/bin/env bash
# Runs a command as on a fresh machine without the optional native tools: libibverbs, its headers, jemalloc and gcc
# are hidden in a private mount namespace (root only; nothing outside the command sees a change). Used to check that
# the README's commands pass there, e.g.  scripts/without-native-tools.sh ./mooring test
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "without-native-tools: needs root (unshare -m)" >&2; exit 2; }
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
exec unshare -m bash -c '
  set -e
  for f in /usr/lib/x86_64-linux-gnu/libibverbs.so.1 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 "$(command -v gcc || true)"; do
    [ -n "$f" ] && [ -e "$f" ] && mount --bind /dev/null "$(readlink -f "$f")"
  done
  [ -d /usr/include/infiniband ] && mount -t tmpfs none /usr/include/infiniband
  exec "$@"
' without-native-tools "$@"
