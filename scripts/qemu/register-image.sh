#!/usr/bin/env bash
# Registers a cloud image with the QEMU driver: the image's disk (qcow2, raw, or anything qemu-img
# reads), for example Debian's or Ubuntu's genericcloud image, becomes image IMAGE_ID of REGION.
# It is copied (converted to qcow2) into DATA_DIR/qemu/images/REGION/, read-only, under a name of
# its own version, and IMAGE_ID.qcow2 is pointed at it: instances made later get an overlay on the
# new version, while existing instances keep theirs. The image needs cloud-init (or anything that
# reads a NoCloud `cidata` seed) for its hostname and SSH keys, and a console on ttyS0.
#
# The API lists an image only when the compute catalogue (CATALOGUE_FILE) has it in that region:
# add an entry with the same id, and a min_disk_gb at least the image's virtual size.
#
# Usage: scripts/qemu/register-image.sh REGION IMAGE_ID FILE [DATA_DIR]   (DATA_DIR: default ./data)
set -euo pipefail

if [ "$#" -lt 3 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
REGION="$1"
IMAGE_ID="$2"
FILE="$3"
DATA_DIR="${4:-${DATA_DIR:-data}}"
QEMU_IMG="${QEMU_IMG:-qemu-img}"

fail() {
  echo "register-image: $*" >&2
  exit 1
}
# The catalogue's own shapes: the driver finds the image by these names.
[[ "$REGION" =~ ^[a-z0-9][a-z0-9-]{1,31}$ ]] || fail "REGION must be a region id such as fra1, not '$REGION'"
[[ "$IMAGE_ID" =~ ^[a-z0-9][a-z0-9.-]{0,62}$ ]] || fail "IMAGE_ID must be an image id such as debian-12, not '$IMAGE_ID'"
[ -r "$FILE" ] || fail "cannot read $FILE"
command -v "$QEMU_IMG" >/dev/null || fail "$QEMU_IMG is missing (Debian: apt-get install qemu-utils)"
"$QEMU_IMG" info "$FILE" >/dev/null || fail "$FILE is not a disk image qemu-img can read"

dir="$(realpath -m "$DATA_DIR")/qemu/images/$REGION"
mkdir -p "$dir"
version="$IMAGE_ID.$(date -u +%Y%m%dT%H%M%SZ).qcow2"
"$QEMU_IMG" convert -O qcow2 "$FILE" "$dir/$version.partial"
chmod 0444 "$dir/$version.partial"
mv "$dir/$version.partial" "$dir/$version"
# Swapped in one rename: the driver never sees the name missing.
ln -sfn "$version" "$dir/$IMAGE_ID.qcow2.partial"
mv -T "$dir/$IMAGE_ID.qcow2.partial" "$dir/$IMAGE_ID.qcow2"
size="$("$QEMU_IMG" info --output=json "$dir/$version" | sed -n 's/.*"virtual-size": *\([0-9]*\).*/\1/p' | head -n 1)"
echo "register-image: $REGION/$IMAGE_ID is $dir/$version ($(((size + 1073741823) / 1073741824)) GiB virtual)"
