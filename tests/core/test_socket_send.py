"""Plain-TCP downloads sent from the reactor with sendfile(2): a file in memory
goes out chunk by chunk, a file not in memory is read in on the work pool first
(never by sendfile on the reactor), a stop ends the send at once even when the
client reads nothing, and a filesystem that cannot say what is in memory sends
from a transfer thread."""

from __future__ import annotations

import array
import fcntl
import os
import socket
import struct
import threading
import time

import pytest
import pytest_twisted
from twisted.internet import reactor, task

from appliance.storage.local import backend, socket_send
from appliance.storage.local.socket_send import ReactorSend, SocketError, StopFlag, memory_check

from .test_files import session_for
from .test_upload_buffer import _connected_pair

SIOCOUTQNSD = 0x894B  # linux/sockios.h: bytes in a socket's send queue not yet sent


def _file(path, size: int) -> tuple[int, bytes]:
    data = os.urandom(size)
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY), data


def _evict(fd: int) -> bool:
    """Drop the file's pages from the page cache; False when the kernel keeps them."""
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    try:
        os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT)
    except BlockingIOError:
        return True
    return False


def _reader(sock) -> tuple[threading.Thread, bytearray]:
    got = bytearray()

    def run():
        with sock:  # closed at the end of the data
            while chunk := sock.recv(1 << 16):
                got.extend(chunk)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, got


def test_a_file_on_a_disk_is_probed_and_one_in_memory_is_not(tmp_path):
    fd, _ = _file(tmp_path / "disk.bin", 4096)
    try:
        assert memory_check(fd, os.fstat(fd).st_dev) == "probe"  # ext4/xfs/btrfs: RWF_NOWAIT says what is cached
    finally:
        os.close(fd)
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    shm = f"/dev/shm/appliance-test-{os.getpid()}-{tmp_path.name}"
    with open(shm, "wb") as f:
        f.write(b"x" * 4096)
    fd = os.open(shm, os.O_RDONLY)
    try:
        assert memory_check(fd, os.fstat(fd).st_dev) == "always"  # tmpfs: in memory, RWF_NOWAIT not supported
    finally:
        os.close(fd)
        os.unlink(shm)


@pytest_twisted.ensureDeferred
async def test_a_file_not_in_memory_is_read_in_on_the_bulk_pool_then_sent(core, tmp_path, monkeypatch):
    fd, data = _file(tmp_path / "cold.bin", 3 * socket_send.WARM_AHEAD + 12345)
    if not _evict(fd):
        pytest.skip("this filesystem keeps the pages in memory")
    warms = []
    bulk = core.threads.bulk

    def counted(fn, *args):
        warms.append(args[1] if fn is socket_send.read_in else None)
        return bulk(fn, *args)

    monkeypatch.setattr(core.threads, "bulk", counted)
    sender_sock, receiver = _connected_pair()
    thread, got = _reader(sender_sock)
    sender = ReactorSend(core.threads, receiver.fileno(), fd, 100, StopFlag(), lambda: None, "probe")
    how, sent = await sender.run()
    receiver.close()
    thread.join(10)
    os.close(fd)
    assert (how, sent) == ("end", len(data) - 100)
    assert bytes(got) == data[100:]
    # read in from the first byte sent, before sendfile touched it (the kernel's
    # own read-ahead may then keep ahead of the rest)
    assert warms and warms[0] == 100
    assert warms == sorted(warms)


@pytest_twisted.ensureDeferred
async def test_a_stop_ends_a_send_at_once_when_the_client_reads_nothing(core, tmp_path):
    fd, _ = _file(tmp_path / "big.bin", 16 << 20)
    sender_sock, receiver = _connected_pair()
    sender_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stop = StopFlag()
    done = ReactorSend(core.threads, receiver.fileno(), fd, 0, stop, lambda: None, "probe").run()
    await task.deferLater(reactor, 0.3, lambda: None)  # the socket is full: no writable event comes
    assert not done.called
    started = time.monotonic()
    stop.set()
    how, sent = await done
    assert time.monotonic() - started < 0.1
    assert how == "stopped" and 0 < sent < 16 << 20
    receiver.close()
    sender_sock.close()
    os.close(fd)


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("congestion_control", ["bbr", "reno"])
async def test_a_paced_send_leaves_at_most_one_call_unsent_when_the_client_reads_nothing(
    core, tmp_path, congestion_control
):
    fd, _ = _file(tmp_path / "big.bin", 16 << 20)
    sender_sock, receiver = _connected_pair()
    try:
        receiver.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion_control.encode())
    except OSError:
        pytest.skip(f"{congestion_control} is not available here")
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)  # room for far more than one call
    stop = StopFlag()
    done = ReactorSend(core.threads, receiver.fileno(), fd, 0, stop, lambda: None, "probe").run()
    await task.deferLater(reactor, 0.3, lambda: None)  # the client's window is full: the rest waits
    unsent = array.array("i", [0])
    fcntl.ioctl(receiver.fileno(), SIOCOUTQNSD, unsent, True)
    lowat = receiver.getsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT)
    stop.set()
    how, sent = await done
    receiver.close()
    sender_sock.close()
    os.close(fd)
    assert how == "stopped"
    if congestion_control == "bbr":
        assert lowat == socket_send.NOTSENT_LOWAT
        assert 0 < unsent[0] < socket_send.NOTSENT_LOWAT + socket_send.PACED_CHUNK
    else:  # not paced: writable while the buffer has room, so it fills
        assert lowat == 0
        assert unsent[0] > 4 * socket_send.UNPACED_CHUNK


@pytest_twisted.ensureDeferred
async def test_a_stop_while_reading_in_waits_for_the_read_before_it_ends(core, tmp_path, monkeypatch):
    fd, _ = _file(tmp_path / "cold.bin", 8 << 20)
    release = threading.Event()
    real_preadv = os.preadv

    def slow_read(fd, buffers, offset, *flags):
        if not flags:  # the work pool's read-in, not a probe
            release.wait(10)
        return real_preadv(fd, buffers, offset, *flags)

    monkeypatch.setattr(socket_send.os, "preadv", slow_read)
    monkeypatch.setattr(ReactorSend, "_in_memory", lambda self, position: False)
    sender_sock, receiver = _connected_pair()
    stop = StopFlag()
    done = ReactorSend(core.threads, receiver.fileno(), fd, 0, stop, lambda: None, "probe").run()
    stop.set()
    await task.deferLater(reactor, 0.1, lambda: None)
    assert not done.called  # the descriptor is still being read on the work pool
    release.set()
    assert await done == ("stopped", 0)
    receiver.close()
    sender_sock.close()
    os.close(fd)


@pytest_twisted.ensureDeferred
async def test_a_client_that_resets_is_a_socket_error(core, tmp_path):
    fd, _ = _file(tmp_path / "big.bin", 8 << 20)
    client, receiver = _connected_pair()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the file cannot fit in the buffers
    done = ReactorSend(core.threads, receiver.fileno(), fd, 0, StopFlag(), lambda: None, "probe").run()
    unsent = array.array("i", [0])
    while not done.called:  # under way: bytes wait in the send queue for a client that reads nothing
        fcntl.ioctl(receiver.fileno(), SIOCOUTQNSD, unsent, True)
        if unsent[0]:
            break
        await task.deferLater(reactor, 0.01, lambda: None)
    # A reset, not a shutdown: shutdown(SHUT_RDWR) sends a FIN, and Linux keeps taking
    # data after SHUT_RD, so whether the send then failed or hung depended on timing
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    with pytest.raises(SocketError):
        await done
    receiver.close()
    os.close(fd)


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("where", ["reactor", "thread"])
async def test_a_download_is_sent_from_the_reactor_or_from_a_thread_when_the_kernel_cannot_tell(
    core, monkeypatch, where
):
    if where == "thread":
        monkeypatch.setattr(backend, "memory_check", lambda fd, st_dev: None)
    session = await session_for(core)
    data = os.urandom(3 * socket_send.UNPACED_CHUNK + 17)
    writer = await session.open_write("/out.bin")
    await writer.write(0, data)
    await writer.commit()
    reader = await session.open_read("/out.bin")
    stop = reader.socket_slot()
    assert isinstance(stop, StopFlag) == (where == "reactor")
    sender_sock, receiver = _connected_pair()
    thread, got = _reader(sender_sock)
    how, sent = await reader.send_socket(receiver.fileno(), 7, stop, lambda: None)
    receiver.close()
    thread.join(10)
    assert (how, sent) == ("end", len(data) - 7)
    assert bytes(got) == data[7:]
    assert reader.bytes_read == len(data) - 7
    await reader.close()
    assert core.threads.transfer_slot() is not None  # a thread's slot came back


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("congestion_control", ["reno", "bbr"])
async def test_each_send_is_larger_where_the_kernel_does_not_pace_the_connection(
    core, tmp_path, monkeypatch, congestion_control
):
    fd, data = _file(tmp_path / "out.bin", 3 * socket_send.UNPACED_CHUNK + 17)
    sender_sock, receiver = _connected_pair()
    try:
        receiver.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion_control.encode())
    except OSError:
        pytest.skip(f"{congestion_control} is not available here")
    asked = []
    real_sendfile = os.sendfile

    def counted(out_fd, in_fd, offset, count):
        asked.append(count)
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(socket_send.os, "sendfile", counted)
    thread, got = _reader(sender_sock)
    how, sent = await ReactorSend(core.threads, receiver.fileno(), fd, 5, StopFlag(), lambda: None, "probe").run()
    receiver.close()
    thread.join(10)
    os.close(fd)
    assert (how, sent) == ("end", len(data) - 5)
    assert bytes(got) == data[5:]
    paced = congestion_control == "bbr"  # bbr has the kernel pace the connection (loopback has no fq qdisc)
    assert set(asked) == {socket_send.PACED_CHUNK if paced else socket_send.UNPACED_CHUNK}


def test_a_socket_whose_congestion_control_cannot_be_read_gets_the_smaller_sends():
    left, right = socket.socketpair()  # not TCP
    with left, right:
        assert socket_send.prepare_socket(left.fileno()) == socket_send.PACED_CHUNK
        assert left.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_STREAM  # its own, still open


def test_read_in_brings_the_whole_range_into_memory_and_stops_at_the_end(tmp_path):
    fd, _ = _file(tmp_path / "cold.bin", 3 * socket_send.READ_IN_PIECE + 5000)
    try:
        if not _evict(fd):
            pytest.skip("this filesystem keeps the pages in memory")
        start = socket_send.READ_IN_PIECE // 2
        socket_send.read_in(fd, start, 10 * socket_send.READ_IN_PIECE)  # past the end: stops there
        probe = bytearray(1)
        for position in range(start, 3 * socket_send.READ_IN_PIECE + 5000, 4096):
            assert os.preadv(fd, [probe], position, os.RWF_NOWAIT) == 1
    finally:
        os.close(fd)


@pytest_twisted.ensureDeferred
async def test_a_disk_error_before_the_first_byte_is_an_os_error(core, tmp_path, monkeypatch):
    fd, _ = _file(tmp_path / "bad.bin", 1 << 20)

    def failing(self, position):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(ReactorSend, "_in_memory", failing)
    sender_sock, receiver = _connected_pair()
    stop = StopFlag()
    with pytest.raises(OSError):
        await ReactorSend(core.threads, receiver.fileno(), fd, 0, stop, lambda: None, "probe").run()
    assert stop.on_set is None  # nothing left hooked to the flag
    receiver.close()
    sender_sock.close()
    os.close(fd)
