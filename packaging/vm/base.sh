#!/bin/sh
# Print the path of a Debian 12 base system for the VM image, as a tarball: debootstrap
# (minbase) with a kernel, systemd, networkd and resolved, Python 3.11, growpart
# (cloud-guest-utils), kbd (console keymaps) and the guest tools of VMware (open-vm-tools) and
# Hyper-V (hyperv-daemons: KVP, VSS, file copy), made once (minutes, from the Debian mirror)
# and kept in APPLIANCE_CHROOT_CACHE (default ~/.cache/appliance-tests).
set -eu
SUITE=bookworm
MIRROR=${APPLIANCE_VM_MIRROR:-http://deb.debian.org/debian}
INCLUDE=linux-image-amd64,initramfs-tools,zstd,systemd-sysv,systemd-resolved,udev,dbus,iproute2,python3.11,ca-certificates,cloud-guest-utils,fdisk,e2fsprogs,open-vm-tools,hyperv-daemons,kbd
CACHE=${APPLIANCE_CHROOT_CACHE:-$HOME/.cache/appliance-tests}
TARBALL="$CACHE/$SUITE-vm-$(printf %s "$INCLUDE" | sha1sum | cut -c1-12).tar"
if [ ! -f "$TARBALL" ]; then
    mkdir -p "$CACHE"
    WORK="$CACHE/debootstrap-vm.tmp"
    rm -rf "$WORK"
    debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$WORK" "$MIRROR" >&2
    tar -C "$WORK" -cf "$TARBALL.tmp" .
    mv "$TARBALL.tmp" "$TARBALL"
    rm -rf "$WORK"
fi
echo "$TARBALL"
