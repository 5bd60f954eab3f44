#!/usr/bin/env bash
# Brings up a throw-away single-node Ceph for tests and benchmarks: one monitor, one OSD on the
# in-memory `memstore` object store, and a RADOS Gateway (beast) on 127.0.0.1, in a temporary
# folder, on free ports, with no mgr, systemd or containers. Needs Debian's ceph-mon, ceph-osd,
# radosgw and ceph-common (16.2, Pacific).
#
#   scripts/ceph/start-single-node.sh [DIR]     # DIR: a new empty folder (default: mktemp -d)
#   scripts/ceph/stop-single-node.sh DIR        # stops it and removes DIR
#
# Ports come from MON_PORT and RGW_PORT, or are picked free; CEPH_START_TIMEOUT (seconds, 120)
# bounds the wait for the gateway. On success it prints one line of JSON: {"dir", "rgw_endpoint",
# "admin_access_key", "admin_secret_key"}; everything else goes to stderr, and the daemons' logs
# stay in DIR/log.
set -euo pipefail

DIR="${1:-$(mktemp -d "${TMPDIR:-/tmp}/ceph-single-node.XXXXXX")}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
if [ -e "$DIR/ceph.conf" ]; then
  echo "ceph: $DIR already holds a cluster" >&2
  exit 1
fi

for tool in ceph-mon ceph-osd radosgw ceph ceph-authtool monmaptool radosgw-admin; do
  if ! command -v "$tool" >/dev/null; then
    echo "ceph: $tool is missing (apt-get install --no-install-recommends ceph-mon ceph-osd radosgw ceph-common)" >&2
    exit 1
  fi
done

# A port nothing listens on (not reserved: the daemons bind it a moment later). Drawn below the
# kernel's ephemeral range: a port from that range can be taken, between the check and the bind,
# by any outgoing connection or port-0 listener (the test suite makes thousands), and then the
# gateway cannot bind it (seen in a full test run: the suite waited on it until its timeout).
EPHEMERAL_LOW="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
PORT_FLOOR=10000
PORT_SPAN=$((EPHEMERAL_LOW > PORT_FLOOR + 1000 ? EPHEMERAL_LOW - PORT_FLOOR : 20000))
free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((PORT_FLOOR + (RANDOM * 32768 + RANDOM) % PORT_SPAN))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  echo "ceph: no free port found" >&2
  exit 1
}
MON_PORT="${MON_PORT:-$(free_port)}"
RGW_PORT="${RGW_PORT:-$(free_port)}"
FSID="$(cat /proc/sys/kernel/random/uuid)"

mkdir -p "$DIR/mon" "$DIR/osd" "$DIR/rgw" "$DIR/run" "$DIR/log"

# A step that fails leaves nothing running: the daemons started so far are stopped, and the last
# lines of their logs are shown (the folder stays, for a closer look).
on_failure() {
  echo "ceph: bring-up failed; the logs are in $DIR/log" >&2
  tail -n 5 "$DIR"/log/*.log >&2 2>/dev/null || true
  for pidfile in "$DIR"/run/*.pid; do
    [ -e "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null
  done
  exit 1
}
trap on_failure ERR
CONF="$DIR/ceph.conf"
# The settings that make one node work and start fast (each measured when it was chosen):
# - pool size 1, `mon allow pool size one`, crush leaves at the OSD level, small pg counts, no
#   autoscaling: one OSD holds every placement group;
# - paxos propose interval 0.05: otherwise each pool RGW creates costs about two seconds;
# - osd fast shutdown false: otherwise memstore skips its save on stop and loses everything;
# - mon mgr mkfs grace: no mgr runs, and the monitor should not complain about it;
# - rgw user quota bucket sync interval 1 keeps user quotas exact (0 would busy-loop), and a
#   bucket quota ttl of 2 s makes the gateway see usage gained before a ceiling was lowered
#   within a few seconds (the default, 600 s, would leave an over-ceiling freeze unenforced); not
#   1 s: the gateway refreshes its cached statistics every ttl/2 seconds in whole seconds, so 1
#   refreshed them on every request, and a refresh that overlaps a write loses it from the count;
# - the usage log (egress figures), flushed every second.
cat >"$CONF" <<CONF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MON_PORT
mon initial members = a
public network = 127.0.0.0/8
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $DIR/keyring
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
log to stderr = false
err to stderr = false
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd crush chooseleaf type = 0
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon max pg per osd = 1000
mon warn on pool no redundancy = false
paxos propose interval = 0.05
mon mgr mkfs grace = 31536000

[mon]
mon data = $DIR/mon
mon allow pool delete = true

[osd]
osd data = $DIR/osd
keyring = $DIR/osd/keyring
osd objectstore = memstore
memstore device bytes = ${MEMSTORE_BYTES:-4294967296}
osd fast shutdown = false
osd crush update on start = true

[client.rgw]
keyring = $DIR/rgw/keyring
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw data = $DIR/rgw
rgw enable usage log = true
rgw usage log tick interval = 1
rgw user quota bucket sync interval = 1
rgw bucket quota ttl = 2
rgw dns name = 127.0.0.1
CONF

# Keyrings: the initial one stays outside the monitor's data folder (--mkfs wants it apart).
ceph-authtool --create-keyring "$DIR/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n client.admin \
  --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
ceph-authtool "$DIR/mon.keyring" --import-keyring "$DIR/keyring" >/dev/null
# The OSD's and the gateway's keys go in before the monitor starts (each `ceph auth` later costs
# a CLI start and a round of consensus).
ceph-authtool --create-keyring "$DIR/osd/keyring" --gen-key -n osd.0 --cap osd 'allow *' --cap mon 'allow profile osd' >/dev/null
ceph-authtool --create-keyring "$DIR/rgw/keyring" --gen-key -n client.rgw --cap mon 'allow rw' --cap osd 'allow rwx' >/dev/null
ceph-authtool "$DIR/mon.keyring" --import-keyring "$DIR/osd/keyring" >/dev/null
ceph-authtool "$DIR/mon.keyring" --import-keyring "$DIR/rgw/keyring" >/dev/null
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$DIR/monmap" >/dev/null
ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/mon.keyring"
ceph-mon -c "$CONF" -i a

OSD_UUID="$(cat /proc/sys/kernel/random/uuid)"
OSD_ID="$(ceph -c "$CONF" osd new "$OSD_UUID" 0)"
ceph-osd -c "$CONF" -i "$OSD_ID" --mkfs --osd-uuid "$OSD_UUID" --no-mon-config
ceph-osd -c "$CONF" -i "$OSD_ID"

radosgw -c "$CONF" -n client.rgw

# The gateway forks into the background and may still fail (its port taken after all): then it is
# gone, and radosgw-admin waits on its watch for ever. Each try is bounded, and a gateway that
# exited fails the bring-up at once, with its log.
rgw_gone() {
  ! pgrep -f -- "radosgw -c $CONF -n client.rgw" >/dev/null
}
fail_if_rgw_gone() {
  if rgw_gone; then
    echo "ceph: the gateway exited (port $RGW_PORT):" >&2
    tail -n 3 "$DIR/log/client.rgw.log" >&2 2>/dev/null || true
    on_failure
  fi
}

# The platform's administrator: the Admin Ops capabilities the rgw driver needs.
ADMIN_ACCESS="CPADMIN$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F | head -c 13)"
ADMIN_SECRET="$(head -c 30 /dev/urandom | base64)"
# Retried until the gateway's first start has set up its zone and pools (until then radosgw-admin
# can fail). A try can fail after it has written the user (seen under load in CI), and every later
# `user create` then fails with "exists": a user already there gets our key added instead (`key
# create` with the same key is a no-op), which makes each try safe to repeat.
admin_user=(--uid=cloud-platform-admin)
admin_key=(--access-key="$ADMIN_ACCESS" --secret-key="$ADMIN_SECRET")
deadline=$((SECONDS + ${CEPH_START_TIMEOUT:-120}))
until timeout 30 radosgw-admin -c "$CONF" -n client.admin user create "${admin_user[@]}" --display-name="Cloud platform" \
    "${admin_key[@]}" >/dev/null 2>"$DIR/log/user-create.err" ||
  { timeout 30 radosgw-admin -c "$CONF" -n client.admin user info "${admin_user[@]}" >/dev/null 2>&1 &&
    timeout 30 radosgw-admin -c "$CONF" -n client.admin key create "${admin_user[@]}" --key-type=s3 "${admin_key[@]}" \
      >/dev/null 2>>"$DIR/log/user-create.err"; }; do
  fail_if_rgw_gone
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "ceph: the administrator could not be created within ${CEPH_START_TIMEOUT:-120} s; the last try said:" >&2
    cat "$DIR/log/user-create.err" >&2
    on_failure
  fi
  sleep 0.1
done
timeout 30 radosgw-admin -c "$CONF" -n client.admin caps add --uid=cloud-platform-admin \
  --caps="users=*;buckets=*;usage=*;metadata=*" >/dev/null

# Ready once the gateway answers S3 (an anonymous bucket listing: 200).
rgw_ready() (
  # In a subshell that ignores SIGPIPE: whatever else answers on the port may hang up on us.
  trap '' PIPE
  local status
  exec 3<>"/dev/tcp/127.0.0.1/$RGW_PORT" || return 1
  printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  read -r -t 2 status <&3 || true
  exec 3>&-
  [[ "$status" == "HTTP/1.1 200"* ]]
)
until rgw_ready 2>/dev/null; do
  fail_if_rgw_gone
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "ceph: the gateway did not answer on 127.0.0.1:$RGW_PORT within ${CEPH_START_TIMEOUT:-120} s" >&2
    on_failure
  fi
  sleep 0.05
done
printf '{"dir":"%s","rgw_endpoint":"http://127.0.0.1:%s","admin_access_key":"%s","admin_secret_key":"%s"}\n' \
  "$DIR" "$RGW_PORT" "$ADMIN_ACCESS" "$ADMIN_SECRET"
