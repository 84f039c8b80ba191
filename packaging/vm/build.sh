#!/bin/sh
# Build a bootable qcow2 of the appliance from the .deb `make deb` made:
#   packaging/vm/build.sh dist/appliance_<version>_<arch>.deb [OUT.qcow2]
# Debian 12 (packaging/vm/base.sh: debootstrap with a kernel, cached), the .deb
# with its sockets (22, 21, 80, 443) and service enabled, systemd-networkd (DHCP)
# and the units of this folder: appliance-firstboot (the appliance's setup on the
# VM's first boot: data dir, host keys, secrets, first admin with a random
# password) and appliance-banner (the console address and sign-in, on the serial
# line and tty1). The image ships no data dir, host key, secret or machine id.
# No mounts or loop devices: a GPT disk (sfdisk) with a BIOS boot partition (GRUB's
# core.img from grub-mkimage), an EFI system partition (FAT filled with mtools:
# Debian's signed shim and GRUB on the removable-media path EFI/BOOT/BOOTX64.EFI, so
# Secure Boot works) and the ext4 root last (mkfs.ext4 -d from a directory), so the
# same disk boots with BIOS and with UEFI and the root can grow into a bigger disk;
# then qemu-img convert.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
DEB=$(realpath "$1")
OUT=$(realpath -m "${2:-$HERE/../../build/vm/appliance.qcow2}")
DISK_SIZE_MIB=${APPLIANCE_VM_DISK_MIB:-4096}
# GPT: 1 BIOS boot (sectors 2048-4095, GRUB's core.img), 2 EFI system (2-128 MiB), 3 root (to the end)
BIOS_START=2048
ESP_START_MIB=2
ROOT_START_MIB=128
ROOT_MIB=$((DISK_SIZE_MIB - ROOT_START_MIB - 1))   # the last MiB holds the backup GPT
GRUB=/usr/lib/grub/i386-pc
CACHE=${APPLIANCE_CHROOT_CACHE:-$HOME/.cache/appliance-tests}
# Debian's signed shim and GRUB (packages shim-signed and grub-efi-amd64-signed): this machine's
# when installed, else unpacked from the packages apt-get downloads (not installed: their
# scripts would install to this machine's own EFI partition)
signed() {  # package, path
    [ -f "$2" ] && { echo "$2"; return; }
    if [ ! -f "$CACHE/$1$2" ]; then
        mkdir -p "$CACHE/$1.tmp" && (cd "$CACHE/$1.tmp" && apt-get download -q "$1" >&2 && dpkg-deb -x ./*.deb "$CACHE/$1")
        rm -rf "$CACHE/$1.tmp"
    fi
    echo "$CACHE/$1$2"
}
SHIM=${APPLIANCE_VM_SHIM:-$(signed shim-signed /usr/lib/shim/shimx64.efi.signed)}
GRUB_EFI=${APPLIANCE_VM_GRUB_EFI:-$(signed grub-efi-amd64-signed /usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed)}
for tool in debootstrap mkfs.ext4 mkfs.fat mcopy sfdisk grub-mkimage qemu-img; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool is missing (make vm-deps)" >&2; exit 1; }
done
for file in "$GRUB/boot.img" "$SHIM" "$GRUB_EFI"; do
    [ -f "$file" ] || { echo "build.sh: $file is missing (make vm-deps)" >&2; exit 1; }
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
for script in appliance-firstboot appliance-banner appliance-growroot appliance-console; do
    install -D -m 0755 "$HERE/files/$script" "$ROOT/usr/lib/appliance/$script"
done
for unit in appliance-firstboot.service appliance-banner.service appliance-growroot.service \
        appliance-console@.service appliance-ovf.service; do
    install -m 0644 "$HERE/files/$unit" "$ROOT/lib/systemd/system/"
done
install -D -m 0644 "$HERE/files/20-wired.network" "$ROOT/etc/systemd/network/20-wired.network"
install -D -m 0644 "$HERE/files/appliance.issue" "$ROOT/etc/issue.d/appliance.issue"
install -D -m 0644 "$HERE/files/appliance-haltpoll.conf" "$ROOT/usr/lib/tmpfiles.d/appliance-haltpoll.conf"
systemctl --root="$ROOT" --quiet enable \
    appliance.service appliance-sftp.socket appliance-ftp.socket appliance-http.socket appliance-https.socket \
    appliance-firstboot.service appliance-banner.service appliance-growroot.service appliance-ovf.service \
    appliance-console@tty1.service appliance-console@ttyS0.service \
    systemd-networkd.service systemd-resolved.service
for unit in "$ROOT"/lib/systemd/system/appliance*.service; do
    command=$(sed -n 's/^ExecStart=[-@+!]*\([^ ]*\).*/\1/p' "$unit")
    [ -z "$command" ] || [ -x "$ROOT$command" ] || { echo "build.sh: $unit runs $command, not in the image" >&2; exit 1; }
done
# The console menu takes the login prompts' place on the first screen and the serial line
systemctl --root="$ROOT" --quiet mask getty@tty1.service serial-getty@ttyS0.service
# DNS from DHCP or the menu, through systemd-resolved (not this machine's resolv.conf)
ln -sfn ../run/systemd/resolve/stub-resolv.conf "$ROOT/etc/resolv.conf"

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
search --no-floppy --fs-uuid --set=root $UUID
menuentry "appliance" {
    linux /vmlinuz root=UUID=$UUID ro console=tty0 console=ttyS0,115200n8 panic=10 no_timer_check
    initrd /initrd.img
}
EOF
# Debian's signed GRUB reads grub.cfg from its prefix on the EFI partition (EFI/debian, where
# grub-install puts it; beside the binary as a fallback): it hands over to the root's
cat > "$WORK/efi-grub.cfg" <<EOF
search --no-floppy --fs-uuid --set=root $UUID
set prefix=(\$root)/boot/grub
configfile \$prefix/grub.cfg
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

# The disk: GPT, the protective MBR holding GRUB's boot.img for BIOS
DISK="$WORK/disk.raw"
truncate -s "${DISK_SIZE_MIB}M" "$DISK"
sfdisk --quiet "$DISK" <<EOF
label: gpt
start=$BIOS_START, size=2048, type=21686148-6449-6E6F-744E-656564454649, name="BIOS boot"
start=$((ESP_START_MIB * 2048)), size=$(((ROOT_START_MIB - ESP_START_MIB) * 2048)), type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="EFI system"
start=$((ROOT_START_MIB * 2048)), size=$((ROOT_MIB * 2048)), type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name="root"
EOF
mkfs.ext4 -q -F -L appliance-root -U "$UUID" -d "$ROOT" -E offset=$((ROOT_START_MIB * 1048576)) "$DISK" "${ROOT_MIB}M"

# UEFI: shim on the removable-media path (no NVRAM entry needed: every firmware boots it),
# the signed GRUB beside it, which shim verifies, and which verifies Debian's signed kernel
ESP="$WORK/esp.img"
mkfs.fat -F 32 -n EFI -C "$ESP" $(((ROOT_START_MIB - ESP_START_MIB) * 1024)) >/dev/null
mmd -i "$ESP" ::/EFI ::/EFI/BOOT ::/EFI/debian
mcopy -i "$ESP" "$SHIM" ::/EFI/BOOT/BOOTX64.EFI
mcopy -i "$ESP" "$GRUB_EFI" ::/EFI/BOOT/grubx64.efi
mcopy -i "$ESP" "$WORK/efi-grub.cfg" ::/EFI/BOOT/grub.cfg
mcopy -i "$ESP" "$WORK/efi-grub.cfg" ::/EFI/debian/grub.cfg
dd if="$ESP" of="$DISK" bs=1M seek=$ESP_START_MIB conv=notrunc status=none

# BIOS: boot.img in the MBR's code area (the partition table stays) loads the first sector
# of core.img from the BIOS boot partition, whose block list loads the rest; both are
# pointed there (grub-install's job, which wants a block device)
grub-mkimage -O i386-pc -o "$WORK/core.img" -p "(hd0,gpt3)/boot/grub" \
    biosdisk part_gpt ext2 normal linux configfile serial terminal echo test search
[ "$(stat -c %s "$WORK/core.img")" -le 1048576 ] || { echo "build.sh: core.img too big" >&2; exit 1; }
le64() { python3 -c 'import struct, sys; sys.stdout.buffer.write(struct.pack("<Q", int(sys.argv[1])))' "$1"; }
cp "$GRUB/boot.img" "$WORK/boot.img"
le64 $BIOS_START | dd of="$WORK/boot.img" bs=1 seek=$((0x5c)) conv=notrunc status=none
le64 $((BIOS_START + 1)) | dd of="$WORK/core.img" bs=1 seek=$((0x1f4)) conv=notrunc status=none
dd if="$WORK/boot.img" of="$DISK" bs=440 count=1 conv=notrunc status=none
dd if="$WORK/core.img" of="$DISK" bs=512 seek=$BIOS_START conv=notrunc status=none

mkdir -p "$(dirname "$OUT")"
qemu-img convert -c -O qcow2 "$DISK" "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT"
