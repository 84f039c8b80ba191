"""An sshfs mount of the daemon's SFTP used as a working folder (issue 22): a git
repository, files edited as editors and `sed -i` do, trees copied with `cp -r` and
`rsync`, appends and truncation, each checked on the server's disk; and an upload
under way in the mount stays invisible to every other session until it is closed.

Runs as root with Debian's sshfs (FUSE); a missing sshfs fails (`make system-deps`).
A file closed in the mount is saved on the server a moment later (FUSE sends
sshfs's CLOSE without waiting for it): checks of the server's disk first wait for
that (SshfsMount.settled), never for a time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from paramiko import SFTPClient, Transport

from ..frontends.sftp_client import SshfsMount, sha256
from ..helpers import require, upload_temp_files

PASSWORD = "user-password-1"
TREE = {
    "a.txt": b"alpha\n",
    "with space/b.txt": b"bravo\n" * 1000,
    "café/été/c.bin": os.urandom(300_000),
    "deep/er/and/deeper/d.txt": b"delta\n",
    "empty.txt": b"",
}


def run(args: list[str], cwd: Path, **options) -> subprocess.CompletedProcess:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, **options)
    assert result.returncode == 0, f"{args} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def need(tool: str) -> str:
    require(tool)
    return shutil.which(tool)


def files_of(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): sha256(p) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def mount(daemon, tmp_path, request):
    user = "fuse" + str(abs(hash(request.node.name)) % 10**8)
    daemon.add_profile(user, PASSWORD)
    daemon.home(user).mkdir(parents=True, exist_ok=True)
    mounted = SshfsMount(daemon, user, PASSWORD, tmp_path / "mnt")
    mounted.user = user
    try:
        yield mounted
    finally:
        mounted.close()


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "tree"
    for name, data in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_a_git_repository_is_made_committed_and_logged_in_the_mount(mount, tmp_path):
    git = [
        need("git"),
        "-c",
        "user.name=Mount Test",
        "-c",
        "user.email=mount@example.com",
        "-c",
        "init.defaultBranch=main",
    ]
    env = {**os.environ, "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    work = mount.path / "project"
    work.mkdir()
    run([*git, "init", "-q"], work, env=env)
    (work / "README.md").write_text("# Project\n")
    (work / "src").mkdir()
    (work / "src" / "main.py").write_text("print('hello')\n")
    run([*git, "add", "-A"], work, env=env)
    run([*git, "commit", "-q", "-m", "first commit"], work, env=env)
    with open(work / "README.md", "a") as f:
        f.write("More.\n")
    run([*git, "commit", "-q", "-am", "second commit"], work, env=env)
    log = run([*git, "log", "--format=%s"], work, env=env).stdout.split("\n")
    assert log[:2] == ["second commit", "first commit"]
    assert run([*git, "status", "--porcelain"], work, env=env).stdout == ""
    mount.settled()
    # the server's copy is the same repository, whole
    on_server = mount.home / "project"
    assert run([*git, "log", "--format=%s"], on_server, env=env).stdout.split("\n")[:2] == log[:2]
    run([*git, "fsck", "--strict"], on_server, env=env)
    assert (on_server / "README.md").read_text() == "# Project\nMore.\n"


def test_a_text_file_is_edited_by_sed_and_by_saving_over_it(mount, tmp_path):
    text = mount.path / "notes.txt"
    text.write_text("one\ntwo\nthree\n")
    run([need("sed"), "-i", "s/two/TWO/", str(text)], tmp_path)
    assert text.read_text() == "one\nTWO\nthree\n"
    mount.settled()
    assert (mount.home / "notes.txt").read_text() == "one\nTWO\nthree\n"

    # an editor's save: write a temporary file beside it, then rename it over the original
    temp = mount.path / ".notes.txt.swp"
    temp.write_text("saved by the editor\n")
    os.rename(temp, text)
    assert text.read_text() == "saved by the editor\n"
    mount.settled()
    assert (mount.home / "notes.txt").read_text() == "saved by the editor\n"
    assert sorted(p.name for p in mount.home.iterdir()) == ["notes.txt"]


def test_a_tree_is_copied_with_cp_and_with_rsync(mount, tree, tmp_path):
    run([need("cp"), "-r", str(tree), str(mount.path / "by-cp")], tmp_path)
    run([need("rsync"), "-r", f"{tree}/", str(mount.path / "by-rsync")], tmp_path)
    mount.settled()
    expected = files_of(tree)
    assert files_of(mount.home / "by-cp") == expected
    assert files_of(mount.home / "by-rsync") == expected
    # rsync again over the same tree, a file changed: only the new content stands
    (tree / "a.txt").write_bytes(b"alpha, changed\n")
    run([need("rsync"), "-r", "--checksum", f"{tree}/", str(mount.path / "by-rsync")], tmp_path)
    mount.settled()
    assert files_of(mount.home / "by-rsync") == files_of(tree)
    assert upload_temp_files(mount.home) == []


def test_append_truncate_and_writes_in_place(mount, tmp_path):
    shell = [need("sh"), "-c"]
    run([*shell, "echo first > log.txt && echo second >> log.txt && echo third >> log.txt"], mount.path)
    mount.settled()
    assert (mount.home / "log.txt").read_text() == "first\nsecond\nthird\n"

    run([need("truncate"), "-s", "5", "log.txt"], mount.path)
    mount.settled()
    assert (mount.home / "log.txt").read_bytes() == b"first"
    run([need("truncate"), "-s", "8", "log.txt"], mount.path)
    mount.settled()
    assert (mount.home / "log.txt").read_bytes() == b"first\0\0\0"

    with open(mount.path / "log.txt", "r+b") as f:  # an existing file changed in place
        f.seek(2)
        f.write(b"RS")
        f.seek(0)
        assert f.read() == b"fiRSt\0\0\0"
    mount.settled()
    assert (mount.home / "log.txt").read_bytes() == b"fiRSt\0\0\0"

    run([*shell, "echo replaced > log.txt"], mount.path)  # an existing file emptied and written again
    mount.settled()
    assert (mount.home / "log.txt").read_text() == "replaced\n"


def test_another_session_sees_the_file_only_once_the_mount_closes_it(daemon, mount):
    transport = Transport(("127.0.0.1", daemon.sftp_port))
    transport.connect(username=mount.user, password=PASSWORD)
    other = SFTPClient.from_transport(transport)
    try:
        (mount.path / "report.csv").write_bytes(b"old report\n")
        mount.settled()
        data = os.urandom(3 << 20)
        with open(mount.path / "report.csv", "wb") as f:
            f.write(data[: 2 << 20])
            f.flush()
            os.fsync(f.fileno())  # sshfs has sent the writes and had them answered
            assert os.stat(mount.path / "report.csv").st_size == 2 << 20  # the mount sees its file
            with open(mount.path / "report.csv", "rb") as again:  # and reads it back
                assert again.read() == data[: 2 << 20]
            assert other.stat("report.csv").st_size == len(b"old report\n")  # others: the old file
            with other.open("report.csv") as seen:
                assert seen.read() == b"old report\n"
            (mount.path / "new.csv").write_bytes(b"x")  # a file the mount holds open is new for others
            with open(mount.path / "draft.csv", "wb") as draft:
                draft.write(b"draft")
                draft.flush()
                os.fsync(draft.fileno())
                with pytest.raises(FileNotFoundError):
                    other.stat("draft.csv")
                assert "draft.csv" not in other.listdir(".")
            f.write(data[2 << 20 :])
        mount.settled()
        assert other.stat("report.csv").st_size == len(data)
        with other.open("report.csv") as seen:
            assert seen.read() == data
        assert (mount.home / "draft.csv").read_bytes() == b"draft"
    finally:
        other.close()
        transport.close()
