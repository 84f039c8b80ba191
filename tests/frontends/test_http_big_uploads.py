"""Big HTTP uploads keep the daemon's memory flat: 2 GiB generated on the fly (never a
file on the test's side) sent as one multipart upload and as one tus PATCH, while
the daemon's resident memory (VmRSS) is sampled; the file must arrive whole."""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import threading
import time

import pytest

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD

SIZE = 2 * 1024**3
BLOCK = 1024 * 1024
MAX_GROWTH = 64 * 1024 * 1024

pytestmark = pytest.mark.slow


def rss(pid: int) -> int:
    """The process's resident memory in bytes (psutil is not installed: /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class PeakMemory:
    """Samples a process's VmRSS every 20 ms until stopped; keeps the highest."""

    def __init__(self, pid: int):
        self.pid = pid
        self.baseline = rss(pid)
        self.peak = self.baseline
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss(self.pid))
            self.samples += 1
            time.sleep(0.02)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss(self.pid))

    @property
    def growth(self) -> int:
        return self.peak - self.baseline


class Generated:
    """SIZE bytes made block by block (each block differs), hashed as they are sent."""

    def __init__(self, size: int = SIZE):
        self.size = size
        self.digest = hashlib.sha256()
        self._noise = os.urandom(BLOCK)

    def __iter__(self):
        sent = 0
        while sent < self.size:
            count = min(BLOCK, self.size - sent)
            block = (sent // BLOCK).to_bytes(8, "big") + self._noise[8:count] if count >= 8 else self._noise[:count]
            self.digest.update(block)
            yield block
            sent += count


def send(daemon, method: str, path: str, headers: dict, parts) -> tuple[int, dict, bytes]:
    """One request whose body is streamed from `parts` (a Content-Length is given)."""
    connection = http.client.HTTPConnection("127.0.0.1", daemon.http_port, timeout=600)
    try:
        connection.putrequest(method, path)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        for part in parts:
            connection.send(part)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def sha256_of(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(4 * BLOCK):
            digest.update(block)
    return digest.hexdigest()


def warm_up(daemon, token: str) -> None:
    """A small upload of each kind first, so what gets imported or cached once is not counted."""
    head = b'--B\r\nContent-Disposition: form-data; name="file"; filename="warm.bin"\r\n\r\n'
    body = head + os.urandom(300_000) + b"\r\n--B--\r\n"
    status, _, _ = send(
        daemon, "POST", "/api/portal/files/upload/?path=/&overwrite=1",
        {"Authorization": f"Bearer {token}", "Content-Type": "multipart/form-data; boundary=B",
         "Content-Length": str(len(body))}, [body],
    )  # fmt: skip
    assert status == 201
    tus = {"Authorization": f"Bearer {token}", "Tus-Resumable": "1.0.0"}
    status, headers, _ = send(
        daemon, "POST", "/api/portal/files/tus/",
        {**tus, "Upload-Length": "300000", "Content-Length": "0",
         "Upload-Metadata": f"filename {base64.b64encode(b'warm.tus').decode()},overwrite {base64.b64encode(b'1').decode()}"},
        [],
    )  # fmt: skip
    assert status == 201
    status, _, _ = send(
        daemon, "PATCH", headers["location"],
        {**tus, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream", "Content-Length": "300000"},
        [os.urandom(300_000)],
    )  # fmt: skip
    assert status == 204
    time.sleep(0.5)


def test_a_2_gib_multipart_upload_keeps_the_daemon_memory_flat(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    warm_up(daemon, api.token)
    data = Generated()
    head = b'--Bound\r\nContent-Disposition: form-data; name="file"; filename="big-multipart.bin"\r\n\r\n'
    tail = b"\r\n--Bound--\r\n"
    headers = {
        "Authorization": f"Bearer {api.token}",
        "Content-Type": "multipart/form-data; boundary=Bound",
        "Content-Length": str(len(head) + data.size + len(tail)),
    }
    started = time.monotonic()
    with PeakMemory(daemon.process.pid) as memory:
        status, _, body = send(daemon, "POST", "/api/portal/files/upload/?path=/", headers, [head, *data, tail])
    took = time.monotonic() - started
    assert status == 201, body
    target = daemon.home("admin") / "big-multipart.bin"
    try:
        assert target.stat().st_size == SIZE
        assert sha256_of(target) == data.digest.hexdigest()
    finally:
        target.unlink()
    print(f"multipart 2 GiB in {took:.1f} s; daemon RSS {memory.baseline >> 20} MiB, peak +{memory.growth >> 20} MiB")
    assert memory.samples > 10
    assert memory.growth < MAX_GROWTH, f"the daemon grew by {memory.growth >> 20} MiB"


def test_a_2_gib_tus_upload_in_one_patch_keeps_the_daemon_memory_flat(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    warm_up(daemon, api.token)
    tus = {"Authorization": f"Bearer {api.token}", "Tus-Resumable": "1.0.0"}
    status, headers, _ = send(
        daemon, "POST", "/api/portal/files/tus/",
        {**tus, "Upload-Length": str(SIZE), "Content-Length": "0",
         "Upload-Metadata": "filename " + base64.b64encode(b"big-tus.bin").decode()}, [],
    )  # fmt: skip
    assert status == 201
    data = Generated()
    started = time.monotonic()
    with PeakMemory(daemon.process.pid) as memory:
        # tus-js-client's default: the whole file in one PATCH
        status, headers, body = send(
            daemon, "PATCH", headers["location"],
            {**tus, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream",
             "Content-Length": str(SIZE)}, data,
        )  # fmt: skip
    took = time.monotonic() - started
    assert status == 204, body
    assert headers["upload-offset"] == str(SIZE)
    target = daemon.home("admin") / "big-tus.bin"
    try:
        assert target.stat().st_size == SIZE
        assert sha256_of(target) == data.digest.hexdigest()
    finally:
        target.unlink()
    print(f"tus 2 GiB in {took:.1f} s; daemon RSS {memory.baseline >> 20} MiB, peak +{memory.growth >> 20} MiB")
    assert memory.samples > 10
    assert memory.growth < MAX_GROWTH, f"the daemon grew by {memory.growth >> 20} MiB"
