"""The Debian package (`make deb`): its layout, lintian without errors, and the
venv it ships serving the console with the packaged config, its four ports passed in
by name as the socket units do (systemd-socket-activate stands in for systemd).

The package is built from the session's wheel by packaging/deb/build.sh (its
dependencies from PyPI at the pinned versions, or pip's cache), or given by APPLIANCE_DEB."""

from __future__ import annotations

import os
import re
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ..helpers import ADMIN_PASSWORD, ROOT, free_port, ops_listener, wait_for_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.requires("dpkg-deb"),
]
VENV = "opt/appliance/venv"


@pytest.fixture(scope="module")
def tree(deb, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("root")
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(root)], check=True, timeout=120)
    subprocess.run(["dpkg-deb", "--control", str(deb), str(root / "DEBIAN")], check=True, timeout=60)
    return root


def test_the_package_layout(deb, tree):
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    assert re.fullmatch(rf"appliance_\d[\w.+~]*_{arch}\.deb", deb.name), deb.name
    control = (tree / "DEBIAN" / "control").read_text()
    assert "Package: appliance\n" in control and f"Architecture: {arch}\n" in control
    assert re.search(r"^Depends:.*python3\.11", control, re.M), control
    assert (tree / "DEBIAN" / "conffiles").read_text().split() == ["/etc/appliance/appliance.toml"]
    assert os.readlink(tree / "usr/bin/appliance") == f"/{VENV}/bin/appliance"
    assert (tree / VENV / "bin/appliance").read_text().startswith(f"#!/{VENV}/bin/python\n")
    assert os.readlink(tree / VENV / "bin/python3.11") == "/usr/bin/python3.11"
    # Nothing points back at the staging folder the venv was built in.
    leftover = subprocess.run(["grep", "-rlI", "/tmp/", str(tree / VENV / "bin"), str(tree / VENV / "pyvenv.cfg")],
                              capture_output=True, text=True)  # fmt: skip
    assert leftover.stdout == ""
    assert (tree / VENV / "lib/python3.11/site-packages/appliance/static/index.html").is_file()
    assert "u appliance " in (tree / "usr/lib/sysusers.d/appliance.conf").read_text()
    assert "d /var/lib/appliance 0750 appliance appliance" in (tree / "usr/lib/tmpfiles.d/appliance.conf").read_text()
    units = sorted(p.name for p in (tree / "lib/systemd/system").iterdir())
    assert units == sorted(p.name for p in (ROOT / "systemd").iterdir() if p.suffix in (".service", ".socket"))
    config = (tree / "etc/appliance/appliance.toml").read_text()
    assert 'data_dir = "/var/lib/appliance"' in config
    for name in ("http", "https", "sftp", "ftp"):
        assert f'{name} = ["systemd:domain=INET6:name={name}"]' in config
        assert f"FileDescriptorName={name}\n" in (tree / f"lib/systemd/system/appliance-{name}.socket").read_text()


@pytest.mark.requires("lintian")
def test_lintian_finds_no_errors(deb):
    result = subprocess.run(["lintian", "--no-cfg", str(deb)], capture_output=True, text=True, timeout=300)
    errors = [line for line in result.stdout.splitlines() if line.startswith("E:")]
    assert errors == [], result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.requires("systemd-socket-activate")
def test_the_packaged_venv_serves_with_the_packaged_config(tree, tmp_path):
    python = tree / VENV / "bin/python"  # run in place: the scripts' shebangs name /opt/appliance
    config = tree / "etc/appliance/appliance.toml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APPLIANCE_", "PYTHON", "VIRTUAL_ENV"))}
    env["APPLIANCE_SECURITY_BCRYPT_ROUNDS"] = "4"
    # the others are the sockets passed below; systemd-socket-activate passes the
    # daemon only the variables named with --setenv
    ops = [f"--setenv={name}={value}" for name, value in ops_listener().items()]
    data = tmp_path / "data"
    base = [str(python), "-m", "appliance"]
    subprocess.run(
        base + ["setup", "--config", str(config), "--data-dir", str(data), "--org", "Acme", "--username", "admin"]
        + ["--email", "admin@example.com", "--password-stdin"],
        input=ADMIN_PASSWORD + "\n", text=True, check=True, capture_output=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    ports = {name: free_port() for name in ("http", "https", "sftp", "ftp")}
    # A bare port, as ListenStream= in the units: one dual-stack [::] socket (AF_INET6).
    listen = [arg for port in ports.values() for arg in ("--listen", str(port))]
    log = open(tmp_path / "daemon.log", "wb")
    manager = subprocess.Popen(
        ["systemd-socket-activate", *listen, *ops, "--fdname=" + ":".join(ports), "--"]
        + base + ["serve", "--config", str(config), "--data-dir", str(data)],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        wait_for_port(ports["https"], manager)
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # the self-signed certificate the daemon makes on first start
        with urllib.request.urlopen(f"https://127.0.0.1:{ports['https']}/", context=insecure, timeout=30) as response:
            index = response.read().decode()
        assert "<title>" in index and "<div id=root>" in index.replace('"', ""), index
        asset = re.search(r'src="?/?([\w-]+\.[0-9a-f]{8}\.js)', index).group(1)
        with urllib.request.urlopen(f"https://127.0.0.1:{ports['https']}/{asset}", context=insecure, timeout=30) as r:
            assert r.read() == (tree / VENV / "lib/python3.11/site-packages/appliance/static" / asset).read_bytes()

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        with pytest.raises(urllib.error.HTTPError) as redirect:
            urllib.request.build_opener(NoRedirect).open(f"http://127.0.0.1:{ports['http']}/", timeout=30)
        assert redirect.value.code in (301, 302, 307, 308)
        assert redirect.value.headers["Location"].startswith("https://")
        redirect.value.close()  # the HTTPError holds the response and its socket until closed
        with socket.create_connection(("127.0.0.1", ports["sftp"]), timeout=30) as sftp:
            assert sftp.recv(64).startswith(b"SSH-2.0-")
        with socket.create_connection(("127.0.0.1", ports["ftp"]), timeout=30) as ftp:
            assert ftp.recv(64).startswith(b"220")
    finally:
        manager.terminate()
        try:
            manager.wait(15)
        except subprocess.TimeoutExpired:
            manager.kill()
            manager.wait()
        log.close()
    assert "Traceback" not in (tmp_path / "daemon.log").read_text(errors="replace")
    # `appliance check` outside the service (no sockets passed) accepts the systemd: listeners.
    check = subprocess.run(
        base + ["check", "--config", str(config), "--data-dir", str(data)],
        capture_output=True, text=True, env=dict(env, **ops_listener()), cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("ok: config "), check.stdout
