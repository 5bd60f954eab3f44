#!/usr/bin/env bash
# Stops a cluster made by start-single-node.sh and removes its folder.
#   scripts/ceph/stop-single-node.sh DIR
set -uo pipefail
DIR="${1:?usage: stop-single-node.sh DIR}"
if [ ! -e "$DIR/ceph.conf" ]; then
  echo "ceph: $DIR holds no cluster" >&2
  exit 1
fi
pids=()
for pidfile in "$DIR"/run/*.pid; do
  [ -e "$pidfile" ] || continue
  pid="$(cat "$pidfile")"
  if kill "$pid" 2>/dev/null; then pids+=("$pid"); fi
done
# Each daemon gets five seconds to stop, then it is killed.
for pid in "${pids[@]}"; do
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -9 "$pid" 2>/dev/null || true
done
rm -rf "$DIR"
