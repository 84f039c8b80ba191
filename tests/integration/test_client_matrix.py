"""The client matrix (issue 22): the clients people script and mount with, each
against the real daemon, as a new user would drive them.

Each client, under a profile of its own, uploads a 16 MiB random file (its
SHA-256 checked on the server's disk) and downloads it again (checked on
return), uploads a tree of small files with awkward names (spaces, UTF-8, a
leading dash, quotes, '#', '%', a long name) and downloads it, renames a file
and a file into a sub-folder, and deletes two. The clients: OpenSSH's `sftp`
and `scp`, paramiko, asyncssh, an sshfs mount (FUSE, as root), PuTTY's `psftp`,
curl's `sftp://` (libssh2), rclone over SFTP and FTP, lftp over FTP and FTPS,
curl over FTP in passive and in active mode; `wget -r` mirrors over FTP. A
client missing here fails its test (`make system-deps` installs them).

What some clients cannot do, and so is not asked of them: `scp` has no rename
or delete, and neither `curl` nor `wget` recurses into an upload (curl sends the
tree file by file, as a script would; wget only downloads).

Expected to differ from OpenSSH's sftp-server, by design (not failures):
- Unix permission bits: files are made rw-r-----, folders rwxr-x--- (a mode sent
  with OPEN or MKDIR, OpenSSH's 0777, is not applied, as a umask would not); a
  mode sent with SETSTAT/FSETSTAT (chmod, `put -p`, rclone, sshfs) is applied on a
  local source within the appliance's rule (the owner keeps read and write; never
  setuid, setgid, sticky or others' write) and answered "unsupported", with
  nothing changed, outside it and on sources that keep no modes.
- Symbolic links: never shown (READLINK is unsupported, links are followed only
  inside the home) and never made (SYMLINK is refused): a link is a way out of
  the home folder.
- Ownership: every entry belongs to uid/gid 0 ("owner"/"group" in long names);
  chown is accepted and not applied.
- No shell: `ssh host command` and rclone's md5sum probes get a clean refusal
  (rclone: `shell_type=none`); `scp` works, as OpenSSH 9 speaks SFTP underneath,
  and so does legacy scp (`scp -O`, `pscp -scp`: tests/frontends/test_scp_legacy.py).
- Uploads are invisible to other sessions until they are complete; the session
  writing one sees it as it grows (a FUSE mount's create-then-stat works).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from ..frontends.sftp_client import OPTIONS, SshfsMount, auth_options, sha256
from ..frontends.sftp_client import run as run_ssh
from ..helpers import Daemon, require

PASSWORD = "user-password-1"
BIG = 16 << 20
LONG_NAME = "a-long-name-" + "x" * 200 + ".txt"
TREE_FILES = (
    "with space.txt",
    "café-été.csv",
    "ünïcode-dir/inner file.txt",
    "ünïcode-dir/nested/deeper.txt",
    "-leading-dash.txt",
    'it\'s "quoted".txt',
    "hash#tag.txt",
    "100% done.txt",
    LONG_NAME,
)
RENAMED_BIG = "renamed #1 été.bin"
MOVED = ("tree/café-été.csv", "tree/ünïcode-dir/café moved.csv")
DELETED = (RENAMED_BIG, "tree/with space.txt")
TIMEOUT = 180


def need(tool: str) -> str:
    """The tool's path; a missing one fails in CI, is skipped elsewhere (helpers.require)."""
    require(tool)
    return shutil.which(tool)


def call(args: list[str], cwd: Path, **options) -> subprocess.CompletedProcess:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, **options)
    assert result.returncode == 0, (
        f"{args[0]} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result


def files_of(root: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file below `root`."""
    return {p.relative_to(root).as_posix(): sha256(p) for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass
class Payload:
    big: Path
    tree: Path

    @property
    def big_sum(self) -> str:
        return sha256(self.big)


@pytest.fixture(scope="module")
def payload(tmp_path_factory) -> Payload:
    where = tmp_path_factory.mktemp("payload")
    big = where / "big.bin"
    big.write_bytes(os.urandom(BIG))
    tree = where / "tree"
    for name in TREE_FILES:
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(name.encode() + b"\n" + os.urandom(100 + len(name)))
    return Payload(big, tree)


def host_key_fingerprints(daemon: Daemon) -> list[str]:
    """SHA256:... of each host key the daemon offers, as `ssh-keygen -l` shows them."""
    from cryptography.hazmat.primitives import serialization

    prints = []
    for path in sorted((daemon.data_dir / "ssh").glob("ssh_host_*_key")):
        key = serialization.load_ssh_private_key(path.read_bytes(), None).public_key()
        blob = base64.b64decode(
            key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).split()[1]
        )
        prints.append("SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("="))
    return prints


# -- the clients ------------------------------------------------------------------------------
# Remote paths are relative to the home folder. put_tree/get_tree copy a whole folder.


class Client:
    def __init__(self, daemon: Daemon, user: str, work: Path):
        self.daemon, self.user, self.work = daemon, user, work

    def close(self) -> None:
        pass


def sftp_quote(text: str) -> str:
    """An argument for OpenSSH's sftp batch file (and curl's SFTP quote commands)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class OpenSSHSftp(Client):
    def batch(self, *commands: str) -> None:
        need("sftp")
        batch = self.work / "batch.txt"
        batch.write_text("\n".join(commands) + "\n")
        args = ["sftp", *OPTIONS, *auth_options(None), "-P", str(self.daemon.sftp_port), "-b", str(batch)]
        result = run_ssh([*args, f"{self.user}@127.0.0.1"], PASSWORD, self.work, timeout=TIMEOUT)
        assert result.returncode == 0, result.stderr[-3000:]

    def put(self, local, remote):
        self.batch(f"put {sftp_quote(str(local))} {sftp_quote(remote)}")

    def get(self, remote, local):
        self.batch(f"get {sftp_quote(remote)} {sftp_quote(str(local))}")

    def put_tree(self, local, remote):
        self.batch(f"put -r {sftp_quote(str(local))} {sftp_quote(remote)}")

    def get_tree(self, remote, local):
        self.batch(f"get -r {sftp_quote(remote)} {sftp_quote(str(local))}")

    def rename(self, old, new):
        self.batch(f"rename {sftp_quote(old)} {sftp_quote(new)}")

    def delete(self, path):
        self.batch(f"rm {sftp_quote(path)}")


class Scp(Client):
    """OpenSSH 9's scp (SFTP underneath): copies only."""

    rename = delete = None

    def scp(self, *args: str) -> None:
        need("scp")
        base = ["scp", *OPTIONS, *auth_options(None), "-P", str(self.daemon.sftp_port)]
        result = run_ssh([*base, *args], PASSWORD, self.work, timeout=TIMEOUT)
        assert result.returncode == 0, result.stderr[-3000:]

    def remote(self, path: str) -> str:
        return f"{self.user}@127.0.0.1:{path}"

    def put(self, local, remote):
        self.scp("--", str(local), self.remote(remote))

    def get(self, remote, local):
        self.scp("--", self.remote(remote), str(local))

    def put_tree(self, local, remote):
        self.scp("-r", "--", str(local), self.remote(remote))

    def get_tree(self, remote, local):
        self.scp("-r", "--", self.remote(remote), str(local))


class Paramiko(Client):
    def __init__(self, *args):
        super().__init__(*args)
        import paramiko

        self.transport = paramiko.Transport(("127.0.0.1", self.daemon.sftp_port))
        self.transport.connect(username=self.user, password=PASSWORD)
        self.sftp = paramiko.SFTPClient.from_transport(self.transport)
        self.sftp.get_channel().settimeout(30)  # a stalled transfer fails instead of hanging

    def close(self):
        self.transport.close()

    def put(self, local, remote):
        self.sftp.put(str(local), remote)

    def get(self, remote, local):
        self.sftp.get(remote, str(local))

    def put_tree(self, local, remote):
        for folder, _, names in os.walk(local):
            target = remote + ("/" + Path(folder).relative_to(local).as_posix()).removesuffix("/.")
            self.sftp.mkdir(target)
            for name in names:
                self.put(Path(folder) / name, f"{target}/{name}")

    def get_tree(self, remote, local):
        import stat

        local.mkdir()
        for entry in self.sftp.listdir_attr(remote):
            if stat.S_ISDIR(entry.st_mode):
                self.get_tree(f"{remote}/{entry.filename}", local / entry.filename)
            else:
                self.get(f"{remote}/{entry.filename}", local / entry.filename)

    def rename(self, old, new):
        self.sftp.rename(old, new)

    def delete(self, path):
        self.sftp.remove(path)


class AsyncSSH(Client):
    def __init__(self, *args):
        super().__init__(*args)
        # its own loop in its own thread: Playwright's sync API (the e2e tests, earlier in
        # the same run) leaves a loop running in this one, where run_until_complete fails
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        import asyncssh

        self.conn = self.run(
            asyncssh.connect(
                "127.0.0.1", self.daemon.sftp_port, username=self.user, password=PASSWORD, known_hosts=None
            )
        )
        self.sftp = self.run(self.conn.start_sftp_client())

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(asyncio.wait_for(coroutine, TIMEOUT), self.loop).result()

    def close(self):
        self.sftp.exit()
        self.conn.close()
        self.run(self.conn.wait_closed())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()

    def put(self, local, remote):
        self.run(self.sftp.put(str(local), remote))

    def get(self, remote, local):
        self.run(self.sftp.get(remote, str(local)))

    def put_tree(self, local, remote):
        self.run(self.sftp.put(str(local), remote, recurse=True))

    def get_tree(self, remote, local):
        self.run(self.sftp.get(remote, str(local), recurse=True))

    def rename(self, old, new):
        self.run(self.sftp.rename(old, new))

    def delete(self, path):
        self.run(self.sftp.remove(path))


class Sshfs(Client):
    """A FUSE mount of the home folder (root only: CI runs as root), used as a folder.
    After each change it waits for the mount's last CLOSE to be saved (see SshfsMount)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.mount = SshfsMount(self.daemon, self.user, PASSWORD, self.work / "mount")
        self.root = self.mount.path

    def close(self):
        self.mount.close()

    def put(self, local, remote):
        shutil.copyfile(local, self.root / remote)
        self.mount.settled()

    def get(self, remote, local):
        shutil.copyfile(self.root / remote, local)

    def put_tree(self, local, remote):
        shutil.copytree(local, self.root / remote, copy_function=shutil.copyfile)
        self.mount.settled()

    def get_tree(self, remote, local):
        shutil.copytree(self.root / remote, local, copy_function=shutil.copyfile)

    def rename(self, old, new):
        os.rename(self.root / old, self.root / new)

    def delete(self, path):
        os.unlink(self.root / path)


def psftp_quote(text: str) -> str:
    """An argument for psftp: in double quotes, a double quote doubled."""
    return '"' + text.replace('"', '""') + '"'


class Psftp(Client):
    """PuTTY's psftp, the engine of the FileZilla/WinSCP family; the host key given by fingerprint."""

    def batch(self, *commands: str) -> None:
        need("psftp")
        script = self.work / "psftp.txt"
        script.write_text("\n".join(commands) + "\n")
        keys = [arg for fingerprint in host_key_fingerprints(self.daemon) for arg in ("-hostkey", fingerprint)]
        args = ["psftp", "-batch", "-be", "-P", str(self.daemon.sftp_port), "-pw", PASSWORD, *keys, "-b", str(script)]
        call([*args, f"{self.user}@127.0.0.1"], self.work, stdin=subprocess.DEVNULL)

    def put(self, local, remote):
        self.batch(f"put {psftp_quote(str(local))} {psftp_quote(remote)}")

    def get(self, remote, local):
        self.batch(f"get {psftp_quote(remote)} {psftp_quote(str(local))}")

    def put_tree(self, local, remote):
        self.batch(f"put -r {psftp_quote(str(local))} {psftp_quote(remote)}")

    def get_tree(self, remote, local):
        self.batch(f"get -r {psftp_quote(remote)} {psftp_quote(str(local))}")

    def rename(self, old, new):
        self.batch(f"mv {psftp_quote(old)} {psftp_quote(new)}")

    def delete(self, path):
        self.batch(f"rm {psftp_quote(path)}")


class Curl(Client):
    """curl file by file: sftp:// (libssh2) or ftp:// in passive or active mode."""

    scheme = "sftp"
    options: tuple[str, ...] = ("--insecure",)  # sftp: no known_hosts check

    def url(self, path: str) -> str:
        port = self.daemon.sftp_port if self.scheme == "sftp" else self.daemon.ftp_port
        return f"{self.scheme}://127.0.0.1:{port}/{quote(path)}"

    def curl(self, *args: str) -> None:
        need("curl")
        call(["curl", "-sS", "--user", f"{self.user}:{PASSWORD}", *self.options, *args], self.work)

    def put(self, local, remote):
        self.curl("--ftp-create-dirs", "-T", str(local), self.url(remote))

    def get(self, remote, local):
        self.curl("-o", str(local), self.url(remote))

    def put_tree(self, local, remote):
        for path in sorted(local.rglob("*")):
            if path.is_file():
                self.put(path, f"{remote}/{path.relative_to(local).as_posix()}")

    def get_tree(self, remote, local):
        for name in TREE_FILES:  # curl lists but does not recurse: a script knows its names
            (local / name).parent.mkdir(parents=True, exist_ok=True)
            self.get(f"{remote}/{name}", local / name)

    def rename(self, old, new):
        self.curl("-Q", f"rename {sftp_quote('/' + old)} {sftp_quote('/' + new)}", self.url(""))

    def delete(self, path):
        self.curl("-Q", f"rm {sftp_quote('/' + path)}", self.url(""))


class CurlFtp(Curl):
    scheme = "ftp"
    options = ("--ftp-pasv",)

    def rename(self, old, new):
        self.curl("-Q", f"RNFR {old}", "-Q", f"RNTO {new}", self.url(""))

    def delete(self, path):
        self.curl("-Q", f"DELE {path}", self.url(""))


class CurlFtpActive(CurlFtp):
    options = ("--ftp-port", "127.0.0.1")


class Rclone(Client):
    """rclone with an on-the-fly remote (no config file)."""

    backend = "sftp"

    def remote(self, path: str) -> str:
        obscured = call([need("rclone"), "obscure", PASSWORD], self.work).stdout.strip()
        if self.backend == "sftp":
            where = f"port={self.daemon.sftp_port},shell_type=none"
        else:
            where = f"port={self.daemon.ftp_port}"
        return f":{self.backend},host=127.0.0.1,{where},user={self.user},pass={obscured}:{path}"

    def rclone(self, *args: str) -> None:
        env = dict(os.environ, RCLONE_CONFIG="/dev/null")
        call([need("rclone"), "--retries", "1", "--low-level-retries", "1", *args], self.work, env=env)

    def put(self, local, remote):
        self.rclone("copyto", str(local), self.remote(remote))

    def get(self, remote, local):
        self.rclone("copyto", self.remote(remote), str(local))

    def put_tree(self, local, remote):
        self.rclone("copy", str(local), self.remote(remote))

    def get_tree(self, remote, local):
        self.rclone("copy", self.remote(remote), str(local))

    def rename(self, old, new):
        self.rclone("moveto", self.remote(old), self.remote(new))

    def delete(self, path):
        self.rclone("deletefile", self.remote(path))


class RcloneFtp(Rclone):
    backend = "ftp"


def lftp_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Lftp(Client):
    """lftp over plain FTP (passive)."""

    settings = "set ftp:ssl-allow no"

    def lftp(self, *commands: str) -> None:
        script = self.work / "lftp.txt"
        script.write_text(
            "\n".join(
                [
                    "set cmd:fail-exit yes",
                    "set net:max-retries 1",
                    "set ftp:passive-mode on",
                    "set ssl:verify-certificate no",
                    self.settings,
                    f"open -u {self.user},{PASSWORD} -p {self.daemon.ftp_port} 127.0.0.1",
                    *commands,
                    "bye",
                ]
            )
            + "\n"
        )
        call([need("lftp"), "-f", str(script)], self.work, stdin=subprocess.DEVNULL)

    def put(self, local, remote):
        self.lftp(f"put {lftp_quote(str(local))} -o {lftp_quote(remote)}")

    def get(self, remote, local):
        self.lftp(f"get {lftp_quote(remote)} -o {lftp_quote(str(local))}")

    def put_tree(self, local, remote):
        self.lftp(f"mirror -R {lftp_quote(str(local))} {lftp_quote(remote)}")

    def get_tree(self, remote, local):
        self.lftp(f"mirror {lftp_quote(remote)} {lftp_quote(str(local))}")

    def rename(self, old, new):
        self.lftp(f"mv {lftp_quote(old)} {lftp_quote(new)}")

    def delete(self, path):
        self.lftp(f"rm {lftp_quote(path)}")


class LftpFtps(Lftp):
    """lftp over explicit FTPS: AUTH TLS, and the data connections in TLS too."""

    settings = "set ftp:ssl-force true; set ftp:ssl-protect-data true"


CLIENTS = {
    "openssh-sftp": OpenSSHSftp,
    "openssh-scp": Scp,
    "paramiko": Paramiko,
    "asyncssh": AsyncSSH,
    "sshfs": Sshfs,
    "psftp": Psftp,
    "curl-sftp": Curl,
    "rclone-sftp": Rclone,
    "rclone-ftp": RcloneFtp,
    "lftp-ftp": Lftp,
    "lftp-ftps": LftpFtps,
    "curl-ftp-pasv": CurlFtp,
    "curl-ftp-port": CurlFtpActive,
}


def profile(daemon: Daemon, name: str) -> str:
    user = "mx" + name.replace("-", "")
    daemon.add_profile(user, PASSWORD)
    daemon.home(user).mkdir(parents=True, exist_ok=True)
    return user


@pytest.mark.parametrize("client_class", CLIENTS.values(), ids=CLIENTS.keys())
def test_client_moves_files_and_trees_renames_and_deletes(daemon, payload, tmp_path, client_class):
    user = profile(daemon, client_class.__name__.lower())
    home = daemon.home(user)
    client = client_class(daemon, user, tmp_path)
    try:
        client.put(payload.big, "big.bin")
        assert sha256(home / "big.bin") == payload.big_sum
        client.get("big.bin", tmp_path / "back.bin")
        assert sha256(tmp_path / "back.bin") == payload.big_sum

        client.put_tree(payload.tree, "tree")
        expected = files_of(payload.tree)
        assert files_of(home / "tree") == expected
        client.get_tree("tree", tmp_path / "back")
        assert files_of(tmp_path / "back") == expected

        if client.rename is None:  # scp
            return
        client.rename("big.bin", RENAMED_BIG)
        client.rename(*MOVED)
        assert not (home / "big.bin").exists() and sha256(home / RENAMED_BIG) == payload.big_sum
        for path in DELETED:
            client.delete(path)
        tree = {f"tree/{name}": digest for name, digest in expected.items()}
        tree[MOVED[1]] = tree.pop(MOVED[0])
        del tree[DELETED[1]]
        assert files_of(home) == tree
    finally:
        client.close()


def test_wget_mirrors_a_tree_over_ftp(daemon, payload, tmp_path):
    """`wget -r ftp://...` (LIST, CWD, RETR for each file) brings back the tree and the big file whole."""
    user = profile(daemon, "wget")
    home = daemon.home(user)
    shutil.copytree(payload.tree, home / "tree")
    shutil.copyfile(payload.big, home / "tree" / "big.bin")
    url = f"ftp://{user}:{PASSWORD}@127.0.0.1:{daemon.ftp_port}/tree/"
    call([need("wget"), "-q", "-r", "-nH", "--tries=1", url], tmp_path)
    assert files_of(tmp_path / "tree") == files_of(home / "tree")
    assert not list(tmp_path.rglob(".listing"))  # its listings are its own business: removed when done
