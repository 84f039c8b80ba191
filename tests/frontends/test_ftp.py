"""FTP with real clients (curl, lftp) over loopback against a live daemon."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from ..helpers import ADMIN_PASSWORD

PASSWORD = "user-password-1"

pytestmark = pytest.mark.requires("curl", "lftp")


def url(daemon, user: str, path: str = "/", password: str = PASSWORD) -> str:
    return f"ftp://{quote(user)}:{quote(password)}@127.0.0.1:{daemon.ftp_port}{quote(path)}"


def curl(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["curl", "-sS", "--ftp-pasv", "--max-time", "60", *args], capture_output=True, timeout=90)
    if check:
        assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result


def lftp(daemon, user: str, commands: str, password: str = PASSWORD, check: bool = True, cwd=None):
    script = f"set ftp:passive-mode on; set ssl:verify-certificate no; set ftp:ssl-allow no; set net:max-retries 1; {commands}; bye"
    result = subprocess.run(
        ["lftp", "-u", f"{user},{password}", "-p", str(daemon.ftp_port), "-e", script, "127.0.0.1"],
        capture_output=True,
        timeout=90,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )
    if check:
        assert result.returncode == 0, (result.stdout + result.stderr).decode(errors="replace")
    return result


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def random_file(path: Path, size: int) -> Path:
    path.write_bytes(os.urandom(size))
    return path


def temp_files(folder: Path) -> list[Path]:
    return list(folder.rglob(".~upload-*"))


def wait_until(condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def transfers(daemon, user: str, action: str) -> list:
    return [row for row in daemon.logs(action) if row["username"] == user and row["protocol"] == "ftp"]


_made: set[str] = set()


def profile(daemon, name: str, **options) -> Path:
    """A profile (made once per module) and its home on disk."""
    if name not in _made:
        daemon.add_profile(name, PASSWORD, **options)
        _made.add(name)
    home = daemon.home(name)
    home.mkdir(parents=True, exist_ok=True)
    return home


# -- round trips --------------------------------------------------------------------------


def test_curl_round_trip_of_a_multi_mib_file_with_audit_rows(daemon, tmp_path):
    home = profile(daemon, "curly")
    source = random_file(tmp_path / "data.bin", 6 * 1024 * 1024 + 123)
    curl("-T", str(source), url(daemon, "curly", "/data.bin"))
    assert sha256(home / "data.bin") == sha256(source)
    curl("-o", str(tmp_path / "back.bin"), url(daemon, "curly", "/data.bin"))
    assert sha256(tmp_path / "back.bin") == sha256(source)

    # Active mode (EPRT/PORT to the client's own address) works too.
    curl("-P", "127.0.0.1", "-o", str(tmp_path / "active.bin"), url(daemon, "curly", "/data.bin"))
    assert sha256(tmp_path / "active.bin") == sha256(source)

    uploads = transfers(daemon, "curly", "upload")
    downloads = transfers(daemon, "curly", "download")
    assert [(r["path"], r["bytes"]) for r in uploads] == [("/data.bin", source.stat().st_size)]
    assert [(r["path"], r["bytes"]) for r in downloads] == [("/data.bin", source.stat().st_size)] * 2
    assert not temp_files(home)


def test_a_download_of_a_file_not_in_memory_is_whole(daemon, tmp_path):
    """A file dropped from the page cache is read in off the reactor, then sent."""
    home = profile(daemon, "coldreader")
    stored = random_file(home / "cold.bin", 20 * 1024 * 1024 + 5)
    fd = os.open(stored, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    curl("-o", str(tmp_path / "cold.bin"), url(daemon, "coldreader", "/cold.bin"))
    assert sha256(tmp_path / "cold.bin") == sha256(stored)
    assert [r["bytes"] for r in transfers(daemon, "coldreader", "download")] == [stored.stat().st_size]


def test_lftp_round_trip_of_a_multi_mib_file(daemon, tmp_path):
    home = profile(daemon, "lefty")
    source = random_file(tmp_path / "blob.bin", 5 * 1024 * 1024 + 7)
    (tmp_path / "back").mkdir()
    lftp(daemon, "lefty", f"put {source} -o blob.bin; get blob.bin -o {tmp_path / 'back' / 'blob.bin'}")
    assert sha256(home / "blob.bin") == sha256(source)
    assert sha256(tmp_path / "back" / "blob.bin") == sha256(source)
    assert [r["bytes"] for r in transfers(daemon, "lefty", "upload")] == [source.stat().st_size]
    assert [r["bytes"] for r in transfers(daemon, "lefty", "download")] == [source.stat().st_size]


def test_small_uploads_end_on_the_reactor_and_a_big_one_moves_to_a_transfer_thread(tmp_path):
    """A file under SPLICE_AFTER is read by the reactor and written with its fsync in one
    trip to the work pool; past it, the rest goes socket to file by splice(2) on a
    transfer thread (the pool starts with none: its first thread shows it was used).
    Either way the file is whole and audited once."""
    from appliance.frontends.ftp.transfer import SPLICE_AFTER

    from ..core.test_threads import threads_of
    from ..helpers import daemon_with

    daemon = daemon_with(tmp_path)
    try:
        home = profile_on(daemon, "splicer")
        small = [
            random_file(tmp_path / f"small-{i}.bin", size) for i, size in enumerate((0, 1, 4096, SPLICE_AFTER - 1))
        ]
        big = random_file(tmp_path / "big.bin", 3 * SPLICE_AFTER + 17)
        lftp(daemon, "splicer", "; ".join(f"put {path} -o {path.name}" for path in small))
        assert "appliance-xfer" not in {name for name, _ in threads_of(daemon.process.pid)}
        lftp(daemon, "splicer", f"put {big} -o big.bin")
        assert "appliance-xfer" in {name for name, _ in threads_of(daemon.process.pid)}
        for path in [*small, big]:
            assert sha256(home / path.name) == sha256(path), path.name
        assert sorted(r["bytes"] for r in transfers(daemon, "splicer", "upload")) == sorted(
            p.stat().st_size for p in [*small, big]
        )
        assert not temp_files(home)
    finally:
        daemon.stop()


def profile_on(daemon, name: str) -> Path:
    """A profile of a daemon of the test's own, and its home on disk."""
    daemon.add_profile(name, PASSWORD)
    home = daemon.home(name)
    home.mkdir(parents=True, exist_ok=True)
    return home


def test_lftp_mirror_of_utf8_names_round_trips(daemon, tmp_path):
    home = profile(daemon, "mirrorer")
    tree = tmp_path / "tree"
    (tree / "ünïcode-dir" / "sous-dossier").mkdir(parents=True)
    (tree / "café-été.csv").write_text("a;b\n1;2\n", encoding="utf-8")
    random_file(tree / "ünïcode-dir" / "données.bin", 200_000)
    (tree / "ünïcode-dir" / "sous-dossier" / "日本語.txt").write_text("こんにちは", encoding="utf-8")
    lftp(daemon, "mirrorer", f"mirror -R {tree} /tree")

    assert (home / "tree" / "café-été.csv").read_text(encoding="utf-8") == "a;b\n1;2\n"
    assert sha256(home / "tree" / "ünïcode-dir" / "données.bin") == sha256(tree / "ünïcode-dir" / "données.bin")
    assert (home / "tree" / "ünïcode-dir" / "sous-dossier" / "日本語.txt").exists()
    on_disk = sorted(str(p.relative_to(home / "tree")) for p in (home / "tree").rglob("*"))
    assert on_disk == sorted(str(p.relative_to(tree)) for p in tree.rglob("*"))

    back = tmp_path / "back"
    lftp(daemon, "mirrorer", f"mirror /tree {back}")
    assert sorted(str(p.relative_to(back)) for p in back.rglob("*")) == on_disk
    assert (back / "café-été.csv").read_text(encoding="utf-8") == "a;b\n1;2\n"
    assert sha256(back / "ünïcode-dir" / "données.bin") == sha256(tree / "ünïcode-dir" / "données.bin")

    listing = curl("--list-only", url(daemon, "mirrorer", "/tree/")).stdout.decode("utf-8").split()
    assert sorted(listing) == ["café-été.csv", "ünïcode-dir"]


# -- listings ------------------------------------------------------------------------------------


def test_list_and_nlst_with_curl(daemon, tmp_path):
    home = profile(daemon, "lister")
    (home / "sub").mkdir(exist_ok=True)
    (home / "one.txt").write_bytes(b"1")
    (home / "sub" / "two.txt").write_bytes(b"22")
    names = curl("--list-only", url(daemon, "lister", "/")).stdout.decode().split()
    assert sorted(names) == ["one.txt", "sub"]
    assert curl("--list-only", url(daemon, "lister", "/sub/")).stdout.decode().split() == ["two.txt"]
    lines = curl(url(daemon, "lister", "/")).stdout.decode().splitlines()
    assert any(line.startswith("-rw") and line.endswith(" one.txt") for line in lines)
    assert any(line.startswith("d") and line.endswith(" sub") for line in lines)


# -- changes ------------------------------------------------------------------------------------------


def test_mkdir_rmdir_dele_and_rename(daemon, tmp_path):
    home = profile(daemon, "changer")
    small = random_file(tmp_path / "small.bin", 1000)
    lftp(daemon, "changer", f"mkdir folder; put {small} -o folder/small.bin; mv folder/small.bin folder/renamed.bin")
    assert (home / "folder" / "renamed.bin").read_bytes() == small.read_bytes()
    assert not (home / "folder" / "small.bin").exists()
    # curl: nested folders made on the way, then DELE and RMD as quote commands.
    curl("--ftp-create-dirs", "-T", str(small), url(daemon, "changer", "/a/b/c/file.bin"))
    assert (home / "a" / "b" / "c" / "file.bin").read_bytes() == small.read_bytes()
    curl("-Q", "DELE /a/b/c/file.bin", "-Q", "RMD /a/b/c", url(daemon, "changer", "/"))
    assert not (home / "a" / "b" / "c").exists() and (home / "a" / "b").is_dir()
    lftp(daemon, "changer", "rm folder/renamed.bin; rmdir folder")
    assert not (home / "folder").exists()
    # A folder that is not empty is not removed.
    result = curl("-v", "-Q", "RMD /a", url(daemon, "changer", "/"), check=False)
    assert result.returncode != 0 and b"550" in result.stderr
    assert (home / "a").is_dir()
    actions = [row["action"] for row in daemon.logs() if row["username"] == "changer" and row["protocol"] == "ftp"]
    for action in ("mkdir", "rename", "delete", "upload"):
        assert action in actions


def test_resume_upload_with_appe_and_rest_and_resume_download(daemon, tmp_path):
    home = profile(daemon, "resumer")
    full = random_file(tmp_path / "full.bin", 3 * 1024 * 1024 + 11)
    data = full.read_bytes()
    # curl -C - : SIZE, then APPE of the rest.
    (home / "appe.bin").write_bytes(data[: 1024 * 1024 + 5])
    curl("-C", "-", "-T", str(full), url(daemon, "resumer", "/appe.bin"))
    assert sha256(home / "appe.bin") == sha256(full)
    # lftp put -c : REST at the remote size, then STOR.
    (home / "rest.bin").write_bytes(data[:777_777])
    result = lftp(daemon, "resumer", f"debug 5; put -c {full} -o rest.bin")
    assert sha256(home / "rest.bin") == sha256(full)
    assert b"REST 777777" in result.stdout + result.stderr
    # curl -C - download: REST, then RETR from the offset.
    partial = tmp_path / "partial.bin"
    partial.write_bytes(data[:2_000_000])
    curl("-C", "-", "-o", str(partial), url(daemon, "resumer", "/appe.bin"))
    assert sha256(partial) == sha256(full)
    assert not temp_files(home)


def test_size_and_mdtm_through_curl(daemon):
    home = profile(daemon, "sizer")
    (home / "s.txt").write_bytes(b"x" * 4321)
    os.utime(home / "s.txt", (1_600_000_000, 1_600_000_000))
    head = curl("-I", url(daemon, "sizer", "/s.txt")).stdout.decode()
    assert "Content-Length: 4321" in head
    assert "Last-Modified: Sun, 13 Sep 2020 12:26:40 GMT" in head


# -- confinement ----------------------------------------------------------------------------------------


def test_paths_outside_the_home_and_links_out_are_refused(daemon, tmp_path):
    home = profile(daemon, "jailed")
    (home / "etc-link").symlink_to("/etc")
    (home / "inside.txt").write_bytes(b"in")
    for path in ("/../../etc/passwd", "/etc/passwd", "/etc-link/passwd"):
        result = curl("-o", str(tmp_path / "x"), url(daemon, "jailed", path), check=False)
        assert result.returncode != 0, path
    assert not (tmp_path / "x").exists() or b"root:" not in (tmp_path / "x").read_bytes()
    result = curl("--list-only", url(daemon, "jailed", "/etc-link/"), check=False)
    assert result.returncode != 0 and b"passwd" not in result.stdout
    result = lftp(daemon, "jailed", "cd ..; pwd; ls", check=False)
    assert b"passwd" not in result.stdout
    result = lftp(daemon, "jailed", "cat ../../../../etc/passwd", check=False)
    assert result.returncode != 0 and b"root:" not in result.stdout
    result = lftp(daemon, "jailed", "ls etc-link/", check=False)
    assert b"passwd" not in result.stdout
    result = lftp(daemon, "jailed", "get etc-link/passwd -o " + str(tmp_path / "pw"), check=False)
    assert result.returncode != 0 and not (tmp_path / "pw").exists()


# -- permissions and quota ---------------------------------------------------------------------------------


def test_permission_refusals_carry_the_core_message(daemon, tmp_path):
    small = random_file(tmp_path / "small.bin", 100)
    home = profile(daemon, "nodelete", permissions=["list", "download", "upload"])
    (home / "keep.txt").write_bytes(b"keep")
    result = curl("-v", "-Q", "DELE keep.txt", url(daemon, "nodelete", "/"), check=False)
    assert result.returncode != 0
    assert b"550 You may not delete files" in result.stderr
    assert (home / "keep.txt").exists()

    home = profile(daemon, "noupload", permissions=["list", "download"])
    result = curl("-v", "-T", str(small), url(daemon, "noupload", "/new.bin"), check=False)
    assert result.returncode != 0 and b"550 You may not upload files" in result.stderr
    assert not (home / "new.bin").exists() and not temp_files(home)

    home = profile(daemon, "nodownload", permissions=["list", "upload"])
    (home / "secret.txt").write_bytes(b"secret")
    result = curl("-v", "-o", str(tmp_path / "secret"), url(daemon, "nodownload", "/secret.txt"), check=False)
    assert result.returncode != 0 and b"550 You may not download files" in result.stderr
    assert not (tmp_path / "secret").exists() or (tmp_path / "secret").read_bytes() == b""


def test_quota_refusal_leaves_no_file_and_no_temp_file(daemon, tmp_path):
    home = profile(daemon, "quotaed", quota_bytes=100_000)
    big = random_file(tmp_path / "big.bin", 2 * 1024 * 1024)
    result = lftp(daemon, "quotaed", f"put {big} -o big.bin", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert b"552" in output and b"quota" in output
    assert wait_until(lambda: not temp_files(home))
    assert not (home / "big.bin").exists()
    result = curl("-v", "-T", str(big), url(daemon, "quotaed", "/big2.bin"), check=False)
    assert result.returncode == 70  # curl: exceeded storage allocation
    assert b"552 Your storage quota of 100.0 KB is used up" in result.stderr
    assert wait_until(lambda: not temp_files(home))
    assert not (home / "big2.bin").exists()
    assert not transfers(daemon, "quotaed", "upload")


# -- interrupted upload ------------------------------------------------------------------------------------------


def test_a_killed_upload_leaves_no_file_and_no_temp_file(daemon, tmp_path):
    home = profile(daemon, "killed")
    big = tmp_path / "huge.bin"
    with open(big, "wb") as f:
        f.truncate(200 * 1024 * 1024)
    client = subprocess.Popen(
        ["curl", "-sS", "--ftp-pasv", "--limit-rate", "20M", "-T", str(big), url(daemon, "killed", "/huge.bin")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: any(p.stat().st_size > 2 * 1024 * 1024 for p in temp_files(home))), (
            "upload did not start"
        )
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    # the temporary file goes by rename (a commit) or by unlink (an abort): either is final
    assert wait_until(lambda: not temp_files(home))
    assert not (home / "huge.bin").exists()
    assert not transfers(daemon, "killed", "upload")


# A client that dies (killed, crashed) in the middle of an upload: its kernel closes both of
# its connections, and the data connection ends as cleanly as after a whole file. The exit
# closes descriptors in order, the control connection (opened first) before the data one, so
# the control connection's end is in the server's kernel before the data connection's EOF.
# (With the data socket on the lower descriptor the two ends come the other way round,
# microseconds apart; an exit preempted between them could make the server commit, so that
# order has no test: it would depend on the scheduler.)
DYING_CLIENT = r"""
import os, socket, sys
port, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]
control = socket.create_connection(("127.0.0.1", port))
replies = control.makefile("rb")
def reply():
    line = replies.readline()
    while line[3:4] == b"-":
        line = replies.readline()
    return line
def command(text):
    control.sendall(text.encode() + b"\r\n")
    return reply()
reply()
command("USER " + user)
assert command("PASS " + password).startswith(b"230")
command("TYPE I")
data = socket.create_connection(("127.0.0.1", int(command("EPSV").split(b"|")[3])))
assert data.fileno() > control.fileno()
assert command("STOR half.bin").startswith(b"150")
data.sendall(b"x" * 100_000)
os._exit(0)  # no QUIT: both connections are closed by the exit, as by a kill
"""


def test_a_client_that_dies_after_part_of_a_file_leaves_no_file(daemon):
    """Both connections end at once and the data one cleanly: the 100,000 bytes that
    arrived are not the file, and nothing is committed or audited."""
    home = profile(daemon, "dying")
    client = subprocess.run(
        [sys.executable, "-c", DYING_CLIENT, str(daemon.ftp_port), "dying", PASSWORD],
        capture_output=True,
        timeout=60,
    )
    assert client.returncode == 0, client.stderr.decode(errors="replace")
    # the temporary file (made before the 150) goes by rename (a commit) or by unlink: either is final
    assert wait_until(lambda: not temp_files(home))
    assert not (home / "half.bin").exists()
    assert not transfers(daemon, "dying", "upload")


# -- sign-in -------------------------------------------------------------------------------------------------------


def test_wrong_password_is_530_and_logged(daemon):
    profile(daemon, "mistyper")
    result = curl("-v", url(daemon, "mistyper", "/", password="wrong-password"), check=False)
    assert result.returncode == 67  # curl: login denied
    assert b"530 Invalid username or password, or the account must use FTPS" in result.stderr
    rows = [row for row in daemon.logs("login_failed") if row["username"] == "mistyper"]
    assert len(rows) == 1 and rows[0]["protocol"] == "ftp" and rows[0]["remote_address"] == "127.0.0.1"


def test_a_payment_missing_organisation_is_refused_with_its_message(daemon):
    org = daemon.add_organisation("Late", status="payment_missing")
    daemon.add_profile("late-user", PASSWORD, org_id=org)
    result = curl("-v", url(daemon, "late-user"), check=False)
    assert result.returncode != 0
    assert b"530 Organisation payment missing" in result.stderr
    result = lftp(daemon, "late-user", "ls", check=False)
    assert result.returncode != 0
    assert b"Organisation payment missing" in result.stdout + result.stderr


def test_a_profile_without_ftp_is_refused(daemon):
    daemon.add_profile("sftp-only", PASSWORD, protocols=["sftp", "web"])
    result = curl("-v", url(daemon, "sftp-only"), check=False)
    assert result.returncode != 0
    assert b"530 FTP access is not enabled for this account" in result.stderr


def test_admin_signs_in_with_the_whole_source_as_home(daemon):
    listing = curl("--list-only", url(daemon, "admin", "/", password=ADMIN_PASSWORD)).stdout.decode().split()
    assert "curly" in listing


def test_the_daemon_logged_no_unhandled_errors(daemon):
    output = daemon.output()
    assert "Unhandled error" not in output
    assert "Traceback" not in output
