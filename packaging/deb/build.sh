#!/bin/sh
# Build appliance_<version>_<arch>.deb from the wheel `make dist` made:
#   packaging/deb/build.sh dist/appliance-<version>-cp311-cp311-linux_<arch>.whl [OUTDIR]
# A venv under /opt/appliance/venv (Debian's python3.11, the wheel and its
# dependencies at the versions constraints.txt pins), /usr/bin/appliance, the
# user (sysusers.d), the data dir (tmpfiles.d), the units from systemd/ and a
# commented /etc/appliance/appliance.toml (a conffile).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WHEEL=$(realpath "$1")
OUT=$(realpath "${2:-$ROOT/dist}")
PYTHON=/usr/bin/python3.11
PIP="${PIP:-$ROOT/.venv/bin/python -m pip}"

VERSION=$(basename "$WHEEL" | sed -n 's/^appliance-\([^-]*\)-.*\.whl$/\1/p')
[ -n "$VERSION" ] || { echo "build.sh: $WHEEL is not an appliance wheel" >&2; exit 1; }
ARCH=$(dpkg --print-architecture)
[ -x "$PYTHON" ] || { echo "build.sh: $PYTHON is missing: apt-get install python3.11 python3.11-venv" >&2; exit 1; }

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
PKG="$STAGE/root"
VENV=/opt/appliance/venv

# The venv is made where it is staged, then its absolute paths are pointed at $VENV.
mkdir -p "$PKG/opt/appliance"
"$PYTHON" -m venv --without-pip "$PKG$VENV"
$PIP --python "$PKG$VENV/bin/python" install --quiet --no-compile --no-warn-script-location \
    --constraint "$ROOT/constraints.txt" "$WHEEL"
grep -rlI --null "$PKG" "$PKG$VENV" | xargs -0 -r sed -i "s|$PKG||g"
find "$PKG$VENV" -name __pycache__ -type d -prune -exec rm -rf {} +
find "$PKG$VENV" -name direct_url.json -path "*.dist-info/*" -delete
rm -f "$PKG$VENV"/bin/activate* "$PKG$VENV"/bin/Activate.ps1
find "$PKG$VENV" -name .gitignore -type f -delete
find "$PKG$VENV/lib" -type f -name '*.py' -perm /111 -exec chmod a-x {} +
find "$PKG$VENV" -type f -name '*.so*' -exec strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
# shared libraries are loaded, not run (wheels' bundled ones, such as Pillow's, come 0755)
find "$PKG$VENV" -type f -name '*.so*' -exec chmod 0644 {} +

install -d "$PKG/usr/bin"
ln -s "$VENV/bin/appliance" "$PKG/usr/bin/appliance"
install -D -m 0644 "$HERE/files/appliance.toml" "$PKG/etc/appliance/appliance.toml"
install -D -m 0644 "$HERE/files/sysusers.conf" "$PKG/usr/lib/sysusers.d/appliance.conf"
install -D -m 0644 "$HERE/files/tmpfiles.conf" "$PKG/usr/lib/tmpfiles.d/appliance.conf"
for unit in "$ROOT"/systemd/*.service "$ROOT"/systemd/*.socket; do
    install -D -m 0644 "$unit" "$PKG/lib/systemd/system/$(basename "$unit")"
done
DOC="$PKG/usr/share/doc/appliance"
install -D -m 0644 "$ROOT/README.md" "$DOC/README.md"
install -m 0644 "$HERE/files/copyright" "$DOC/copyright"
install -D -m 0644 "$HERE/files/lintian-overrides" "$PKG/usr/share/lintian/overrides/appliance"
printf 'appliance (%s) unstable; urgency=medium\n\n  * Built from the appliance wheel %s.\n\n -- Appliance maintainers <appliance@files.example.com>  %s\n' \
    "$VERSION" "$(basename "$WHEEL")" "$(date -R -d "@$(stat -c %Y "$WHEEL")")" | gzip -9n > "$DOC/changelog.gz"

install -d "$PKG/DEBIAN"
for script in postinst prerm postrm; do
    install -m 0755 "$HERE/files/$script" "$PKG/DEBIAN/$script"
done
echo /etc/appliance/appliance.toml > "$PKG/DEBIAN/conffiles"
SIZE=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
cat > "$PKG/DEBIAN/control" <<EOF
Package: appliance
Version: $VERSION
Architecture: $ARCH
Maintainer: Appliance maintainers <appliance@files.example.com>
Installed-Size: $SIZE
Depends: python3.11, systemd, libc6 (>= 2.28)
Section: net
Priority: optional
Homepage: https://localhost/appliance
Description: on-premise file-transfer portal (SFTP, FTP/FTPS, web console)
 One daemon serves SFTP, FTP/FTPS and a web console with its JSON API to
 several organisations, each with its own users, sources and shares.
 It runs as the unprivileged user appliance, its ports passed in by the
 socket units, with its data in /var/lib/appliance.
EOF

find "$PKG" -exec touch -h -d "@$(stat -c %Y "$WHEEL")" {} +
mkdir -p "$OUT"
DEB="$OUT/appliance_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$DEB" >/dev/null
echo "$DEB"
