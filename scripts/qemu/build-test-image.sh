#!/usr/bin/env bash
# Builds the QEMU driver's tiny test image from Debian packages only:
#   - a Debian kernel (`apt-get download linux-image-<version>-amd64`, unpacked with dpkg-deb; the
#     uncompressed vmlinux is taken out of its bzImage, as it boots about twice as fast under TCG),
#     with the dozen modules the guest needs (virtio disk, network and entropy, ISO 9660 for the
#     seed, the ACPI power button);
#   - a busybox initramfs (Debian's busybox-static) with dropbear (Debian's dropbear-bin and the
#     libraries it links) as its SSH server.
# The guest reads its hostname and SSH keys from a cloud-init NoCloud seed (`cidata`), the same
# seed a real cloud image's cloud-init reads; `cloudplatform.mode=rescue` on the kernel command
# line boots it as the rescue system.
#
# Output (the QEMU driver's QEMU_TEST_IMAGE_DIR): vmlinux, initramfs.cpio.gz and image.json.
# The kernel is kept in the cache folder by version, so a second build downloads nothing.
#
# Usage: scripts/qemu/build-test-image.sh [OUT_DIR]
#   needs: apt-get, dpkg-deb, xz (xz-utils), busybox-static, dropbear-bin, gzip
#   QEMU_CACHE_DIR        default ${XDG_CACHE_HOME:-$HOME/.cache}/cloud-platform/qemu
#   QEMU_KERNEL_VERSION   default: the version linux-image-amd64 depends on (apt-cache)
set -euo pipefail

CACHE_DIR="${QEMU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cloud-platform/qemu}"
OUT_DIR="${1:-$CACHE_DIR/test-image}"
BUSYBOX=/bin/busybox
DROPBEAR=/usr/sbin/dropbear
# The modules the guest loads (their dependencies are found in modules.dep).
MODULES=(virtio_pci virtio_blk virtio_net virtio-rng isofs evdev button)

fail() {
  echo "build-test-image: $*" >&2
  exit 1
}

for tool in apt-get dpkg-deb xz gzip; do
  command -v "$tool" >/dev/null || fail "$tool is missing (Debian: apt-get install xz-utils gzip)"
done
[ -x "$BUSYBOX" ] && "$BUSYBOX" --list | grep -x acpid >/dev/null || fail "$BUSYBOX is missing (Debian: apt-get install busybox-static)"
[ -x "$DROPBEAR" ] || fail "$DROPBEAR is missing (Debian: apt-get install dropbear-bin)"
# A static busybox: the initramfs has no C library of its own beyond dropbear's.
if ldd "$BUSYBOX" >/dev/null 2>&1; then fail "$BUSYBOX is not statically linked (install busybox-static, not busybox)"; fi

KVER="${QEMU_KERNEL_VERSION:-}"
if [ -z "$KVER" ]; then
  KVER="$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: linux-image-\(.*-amd64\)$/\1/p' | head -n 1)"
  # Without package lists, the newest kernel already in the cache serves.
  if [ -z "$KVER" ]; then
    KVER="$(find "$CACHE_DIR" -maxdepth 1 -name 'kernel-*' -printf '%f\n' 2>/dev/null | sed 's/^kernel-//' | sort -V | tail -n 1)"
  fi
  [ -n "$KVER" ] || fail "cannot tell which Debian kernel to use: run apt-get update, or set QEMU_KERNEL_VERSION"
fi
KERNEL_DIR="$CACHE_DIR/kernel-$KVER"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# --- The kernel, once per version ------------------------------------------------------------
if [ ! -f "$KERNEL_DIR/vmlinux" ] || [ ! -f "$KERNEL_DIR/modules/load-order" ]; then
  echo "build-test-image: downloading Debian's linux-image-$KVER"
  (cd "$WORK" && apt-get download -q "linux-image-$KVER" >/dev/null 2>&1) || fail "apt-get download linux-image-$KVER failed"
  dpkg-deb -x "$WORK"/linux-image-*.deb "$WORK/kernel"
  "$BUSYBOX" depmod -b "$WORK/kernel" "$KVER"
  moddir="$WORK/kernel/lib/modules/$KVER"
  partial="$KERNEL_DIR.partial"
  rm -rf "$partial"
  mkdir -p "$partial/modules"
  # The uncompressed kernel sits xz-compressed inside the bzImage (CONFIG_KERNEL_XZ): found by
  # the xz stream's magic, as the kernel's own scripts/extract-vmlinux does.
  bzimage="$WORK/kernel/boot/vmlinuz-$KVER"
  offset="$(LC_ALL=C grep -obUaP '\xFD7zXZ\x00' "$bzimage" | head -n 1 | cut -d: -f1 || true)"
  [ -n "$offset" ] || fail "no xz stream in $bzimage"
  tail -c "+$((offset + 1))" "$bzimage" | xz -dc 2>/dev/null >"$partial/vmlinux" || true
  [ "$(head -c 4 "$partial/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ] || fail "the kernel taken out of $bzimage is not an ELF file"
  # Each module after its dependencies, each once.
  declare -A seen=()
  order=()
  add_module() {
    local path="$1" dep
    [ -n "${seen[$path]:-}" ] && return
    seen[$path]=1
    for dep in $(grep -E "^$path:" "$moddir/modules.dep" | cut -d: -f2); do add_module "$dep"; done
    order+=("$path")
  }
  for name in "${MODULES[@]}"; do
    path="$(grep -E "/$name\.ko:" "$moddir/modules.dep" | cut -d: -f1 | head -n 1)"
    [ -n "$path" ] || fail "module $name is not in linux-image-$KVER"
    add_module "$path"
  done
  for path in "${order[@]}"; do
    cp "$moddir/$path" "$partial/modules/"
    basename "$path" >>"$partial/modules/load-order"
  done
  rm -rf "$KERNEL_DIR"
  mv "$partial" "$KERNEL_DIR"
  rm -rf "$WORK/kernel" "$WORK"/*.deb
fi

# --- The initramfs ---------------------------------------------------------------------------
root="$WORK/root"
mkdir -p "$root"/{bin,sbin,etc/acpi/PWRF,etc/dropbear,lib/modules,proc,sys,dev,run,tmp,var/log,var/run,root,mnt/seed,mnt/disk,usr/bin,usr/sbin}
cp "$BUSYBOX" "$root/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ "$applet" = busybox ] || ln -sf /bin/busybox "$root/bin/$applet"
done
ln -sf /bin/busybox "$root/init"
ln -sf /bin/busybox "$root/sbin/init"
cp "$KERNEL_DIR"/modules/* "$root/lib/modules/"

# dropbear and the libraries it links, at the paths the dynamic linker looks for them.
cp "$DROPBEAR" "$root/usr/sbin/dropbear"
for library in $(ldd "$DROPBEAR" | grep -oE '/[^ ]+\.so[^ ]*'); do
  mkdir -p "$root$(dirname "$library")"
  cp -L "$library" "$root$library"
done

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
EOF
# No password: the console is reached through the platform's single-use URLs, SSH by key only.
echo 'root:*:19000:0:99999:7:::' >"$root/etc/shadow"
echo '/bin/sh' >"$root/etc/shells"
chmod 700 "$root/root"

cat >"$root/etc/inittab" <<'EOF'
::sysinit:/etc/rc
ttyS0::respawn:-/bin/sh
::ctrlaltdel:/bin/reboot
::shutdown:/etc/rc.shutdown
EOF

cat >"$root/etc/profile" <<'EOF'
export HOME=/root PATH=/bin:/sbin:/usr/bin:/usr/sbin
export PS1='\u@\h:\w\$ '
cd "$HOME"
EOF

# The ACPI power button (QMP system_powerdown) powers the guest off.
printf '#!/bin/sh\nexec /bin/poweroff\n' >"$root/etc/acpi/PWRF/00000080"
chmod 755 "$root/etc/acpi/PWRF/00000080"

cat >"$root/etc/rc.shutdown" <<'EOF'
#!/bin/sh
echo "cloudplatform: shutting down"
killall dropbear acpid 2>/dev/null
sync
EOF
chmod 755 "$root/etc/rc.shutdown"

cat >"$root/etc/rc" <<'EOF'
#!/bin/sh
# The tiny guest's start-up: modules, network, then the NoCloud seed (hostname and SSH keys).
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts
for module in $(cat /lib/modules/load-order); do insmod "/lib/modules/$module" 2>/dev/null; done

mode=normal
grep -q 'cloudplatform.mode=rescue' /proc/cmdline && mode=rescue

ip link set lo up
# QEMU's user-mode network: the guest is 10.0.2.15, the host side 10.0.2.2.
for attempt in 1 2 3 4 5 6 7 8 9 10; do [ -e /sys/class/net/eth0 ] && break; sleep 0.2; done
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2
echo 'nameserver 10.0.2.3' >/etc/resolv.conf

# The seed: an ISO 9660 volume labelled cidata with meta-data and user-data, as cloud-init's
# NoCloud data source reads it.
seed=""
for device in /dev/vd? /dev/sr?; do
  [ -b "$device" ] || continue
  if mount -t iso9660 -o ro "$device" /mnt/seed 2>/dev/null; then
    if [ -f /mnt/seed/meta-data ]; then seed="$device"; break; fi
    umount /mnt/seed
  fi
done
name=localhost
mkdir -p /root/.ssh
chmod 700 /root/.ssh
: >/root/.ssh/authorized_keys
if [ -n "$seed" ]; then
  name="$(sed -n 's/^local-hostname: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /mnt/seed/meta-data)"
  # ssh_authorized_keys entries are double-quoted strings, one per line.
  sed -n '/^ssh_authorized_keys:/,/^[^ ]/s/^ *- *"\(.*\)"$/\1/p' /mnt/seed/user-data >/root/.ssh/authorized_keys
fi
chmod 600 /root/.ssh/authorized_keys
[ "$mode" = rescue ] && name=rescue
hostname "${name:-localhost}"
echo "${name:-localhost}" >/etc/hostname

acpid -c /etc/acpi
# Host keys are made when a client first asks for one; key logins only.
dropbear -R -s -p 22
if [ "$mode" = rescue ]; then
  echo "cloudplatform: rescue system; the instance's disk is /dev/vda (not mounted)"
fi
echo "cloudplatform: $(hostname) is up ($(cat /sys/block/vda/size 2>/dev/null || echo 0) sectors on /dev/vda)"
EOF
chmod 755 "$root/etc/rc"

mkdir -p "$OUT_DIR"
(cd "$root" && find . | sort | "$BUSYBOX" cpio -o -H newc 2>/dev/null) | gzip -9 >"$OUT_DIR/initramfs.cpio.gz.partial"
cp "$KERNEL_DIR/vmlinux" "$OUT_DIR/vmlinux.partial"
mv "$OUT_DIR/vmlinux.partial" "$OUT_DIR/vmlinux"
mv "$OUT_DIR/initramfs.cpio.gz.partial" "$OUT_DIR/initramfs.cpio.gz"
cat >"$OUT_DIR/image.json" <<EOF
{
  "kernel_version": "$KVER",
  "kernel": "vmlinux",
  "initrd": "initramfs.cpio.gz",
  "append": "console=ttyS0,115200 quiet panic=-1 mitigations=off"
}
EOF
echo "build-test-image: $OUT_DIR (Debian kernel $KVER, $(du -h "$OUT_DIR/initramfs.cpio.gz" | cut -f1) initramfs)"
