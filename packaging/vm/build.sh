#!/bin/sh
# Build a bootable qcow2 of the appliance from the .deb `make deb` made:
#   packaging/vm/build.sh dist/appliance_<version>_<arch>.deb [OUT.qcow2]
# Debian 12 (packaging/vm/base.sh: debootstrap with a kernel, cached), the .deb
# with its sockets (22, 21, 80, 443) and service enabled, systemd-networkd (DHCP)
# and two units of this folder: appliance-firstboot (the appliance's setup on the
# VM's first boot: data dir, host keys, secrets, first admin with a random
# password) and appliance-banner (the console address and sign-in, on the serial
# line and tty1). The image ships no data dir, host key, secret or machine id.
# No mounts or loop devices: the ext4 file system is made from a directory
# (mkfs.ext4 -d) inside a raw disk with an MBR (sfdisk), GRUB for BIOS
# (grub-mkimage: boot.img in the MBR, core.img after it), then qemu-img convert.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
DEB=$(realpath "$1")
OUT=$(realpath -m "${2:-$HERE/../../build/vm/appliance.qcow2}")
DISK_SIZE_MIB=${APPLIANCE_VM_DISK_MIB:-4096}
PART_START_MIB=1
GRUB=/usr/lib/grub/i386-pc
for tool in debootstrap mkfs.ext4 sfdisk grub-mkimage qemu-img; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool is missing (make vm-deps)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "build.sh: run as root (debootstrap, chroot, file owners in the image)" >&2; exit 1; }

BASE=$("$HERE/base.sh")
WORK=$(mktemp -d -p "${TMPDIR:-/var/tmp}" appliance-vm.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
ROOT="$WORK/root"
mkdir "$ROOT"
tar -C "$ROOT" -xf "$BASE"

in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "$@"; }

# The appliance, its units and the VM's own
cp "$DEB" "$ROOT/tmp/appliance.deb"
in_root dpkg --install /tmp/appliance.deb >/dev/null
rm "$ROOT/tmp/appliance.deb"
install -D -m 0755 "$HERE/files/appliance-firstboot" "$ROOT/usr/lib/appliance/appliance-firstboot"
install -D -m 0755 "$HERE/files/appliance-banner" "$ROOT/usr/lib/appliance/appliance-banner"
install -m 0644 "$HERE/files/appliance-firstboot.service" "$HERE/files/appliance-banner.service" "$ROOT/lib/systemd/system/"
install -D -m 0644 "$HERE/files/20-wired.network" "$ROOT/etc/systemd/network/20-wired.network"
install -D -m 0644 "$HERE/files/appliance.issue" "$ROOT/etc/issue.d/appliance.issue"
systemctl --root="$ROOT" --quiet enable \
    appliance.service appliance-sftp.socket appliance-ftp.socket appliance-http.socket appliance-https.socket \
    appliance-firstboot.service appliance-banner.service systemd-networkd.service

echo appliance > "$ROOT/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tappliance\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$ROOT/etc/hosts"
UUID=$(cat /proc/sys/kernel/random/uuid)
printf 'UUID=%s\t/\text4\terrors=remount-ro\t0\t1\n' "$UUID" > "$ROOT/etc/fstab"

# GRUB reads /vmlinuz and /initrd.img, the links Debian's kernel packages keep up to date
[ -e "$ROOT/vmlinuz" ] && [ -e "$ROOT/initrd.img" ] || { echo "build.sh: no /vmlinuz or /initrd.img in the base" >&2; exit 1; }
mkdir -p "$ROOT/boot/grub"
cat > "$ROOT/boot/grub/grub.cfg" <<EOF
serial --unit=0 --speed=115200
terminal_input console serial
terminal_output console serial
set timeout=1
menuentry "appliance" {
    linux /vmlinuz root=UUID=$UUID ro console=tty0 console=ttyS0,115200n8 panic=10 no_timer_check
    initrd /initrd.img
}
EOF

# Nothing made on this machine that each VM must make for itself
rm -rf "$ROOT/var/lib/appliance"   # systemd-tmpfiles makes it at boot, appliance-firstboot fills it
: > "$ROOT/etc/machine-id"
rm -f "$ROOT/var/lib/dbus/machine-id" "$ROOT/var/lib/systemd/random-seed" "$ROOT/var/cache/debconf/"*-old
rm -rf "$ROOT/var/cache/apt/"*.bin "$ROOT/var/cache/apt/archives/"*.deb "$ROOT/var/lib/apt/lists/"* "$ROOT/tmp/"* "$ROOT/var/tmp/"*
find "$ROOT/var/log" -type f -delete
if find "$ROOT" -xdev \( -name 'ssh_host_*' -o -name appliance.db \) | grep .; then
    echo "build.sh: the image would ship the keys or the database above" >&2; exit 1
fi

# The disk: MBR, one bootable partition from 1 MiB, GRUB's core.img in the gap before it
DISK="$WORK/disk.raw"
truncate -s "${DISK_SIZE_MIB}M" "$DISK"
echo "start=$((PART_START_MIB * 2048)), type=83, bootable" | sfdisk --quiet --label dos "$DISK"
mkfs.ext4 -q -F -L appliance-root -U "$UUID" -d "$ROOT" -E offset=$((PART_START_MIB * 1048576)) \
    "$DISK" "$(((DISK_SIZE_MIB - PART_START_MIB) * 1024))k"
grub-mkimage -O i386-pc -o "$WORK/core.img" -p "(hd0,msdos1)/boot/grub" \
    biosdisk part_msdos ext2 normal linux configfile serial terminal echo test
[ "$(stat -c %s "$WORK/core.img")" -lt $((PART_START_MIB * 1048576 - 512)) ] || { echo "build.sh: core.img too big" >&2; exit 1; }
dd if="$GRUB/boot.img" of="$DISK" bs=440 count=1 conv=notrunc status=none   # the partition table stays
dd if="$WORK/core.img" of="$DISK" bs=512 seek=1 conv=notrunc status=none      # its blocklist says sector 2 on

mkdir -p "$(dirname "$OUT")"
qemu-img convert -c -O qcow2 "$DISK" "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT"
