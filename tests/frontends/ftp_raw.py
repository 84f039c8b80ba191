"""A raw FTP client over a socket, for protocol-level checks real clients never make."""

from __future__ import annotations

import re
import socket
import ssl
import struct

from OpenSSL import SSL


def tls_client(maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    """A TLS client context that accepts the appliance's self-signed certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if maximum is not None:
        context.maximum_version = maximum
    return context


class RawFTP:
    """One control connection; `source` binds the client side (e.g. 127.0.0.2)."""

    tls: ssl.SSLContext | None = None

    def __init__(self, port: int, source: str | None = None, timeout: float = 20):
        self.sock = socket.socket()
        self.sock.settimeout(timeout)
        if source:
            self.sock.bind((source, 0))
        self.sock.connect(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")
        self.greeting = self.reply()

    def close(self) -> None:
        self.file.close()
        self.sock.close()

    def __enter__(self) -> RawFTP:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start_tls(self, context: ssl.SSLContext | None = None) -> None:
        """AUTH TLS, then the handshake on this connection (explicit FTPS)."""
        code, text = self.cmd("AUTH TLS")
        assert code == 234, text
        self.tls = context or tls_client()
        self.file.close()
        self.sock = self.tls.wrap_socket(self.sock, server_hostname="127.0.0.1")
        self.file = self.sock.makefile("rb")

    def start_pyopenssl_tls(self) -> SSL.Connection:
        """AUTH TLS with pyOpenSSL instead (it can leave what the server sends unread, as
        lftp does); returns the control connection, whose get_session() a pyOpenSSL data
        connection resumes."""
        code, text = self.cmd("AUTH TLS")
        assert code == 234, text
        self.file.close()
        # pyOpenSSL needs a blocking socket; a receive timeout still ends a wait for a reply
        timeout = self.sock.gettimeout()
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", int(timeout), 0))
        connection = SSL.Connection(SSL.Context(SSL.TLS_CLIENT_METHOD), self.sock)
        connection.set_connect_state()
        connection.do_handshake()
        self.sock = connection  # sendall and recv from pyOpenSSL, close from the socket
        self.file = _Lines(connection)
        return connection

    def tls_data(self, port: int, session: ssl.SSLSession | None | bool = True) -> ssl.SSLSocket:
        """A data connection in TLS (PROT P), offering the control connection's session
        (pass None to offer none); the handshake is done before this returns."""
        return self.tls.wrap_socket(
            self.data(port), server_hostname="127.0.0.1", session=self.sock.session if session is True else session
        )

    def send(self, line: str | bytes) -> None:
        if isinstance(line, str):
            line = line.encode("utf-8")
        self.sock.sendall(line + b"\r\n")

    def reply(self) -> tuple[int, str]:
        """The next reply: its code and text (lines of a multi-line reply joined by \\n)."""
        first = self.file.readline()
        if not first:
            raise EOFError("the server closed the connection")
        text = first.decode("utf-8").rstrip("\r\n")
        code = text[:3]
        lines = [text[4:]]
        if text[3:4] == "-":
            while True:
                line = self.file.readline().decode("utf-8").rstrip("\r\n")
                if not line:
                    raise EOFError("the server closed the connection inside a reply")
                if line.startswith(code + " "):
                    lines.append(line[4:])
                    break
                lines.append(line)
        return int(code), "\n".join(lines)

    def cmd(self, line: str | bytes) -> tuple[int, str]:
        self.send(line)
        return self.reply()

    def login(self, username: str, password: str) -> None:
        code, text = self.cmd(f"USER {username}")
        assert code == 331, text
        code, text = self.cmd(f"PASS {password}")
        assert code == 230, text

    def pasv(self) -> tuple[str, int]:
        code, text = self.cmd("PASV")
        assert code == 227, text
        numbers = [int(n) for n in re.search(r"\((\d+,\d+,\d+,\d+,\d+,\d+)\)", text).group(1).split(",")]
        return ".".join(map(str, numbers[:4])), numbers[4] << 8 | numbers[5]

    def epsv(self) -> int:
        code, text = self.cmd("EPSV")
        assert code == 229, text
        return int(re.search(r"\(\|\|\|(\d+)\|\)", text).group(1))

    def data(self, port: int, source: str | None = None) -> socket.socket:
        conn = socket.socket()
        conn.settimeout(20)
        if source:
            conn.bind((source, 0))
        conn.connect(("127.0.0.1", port))
        return conn

    def closed(self) -> bool:
        """Whether the server has closed the connection (reads what is left)."""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


class _Lines:
    """readline() over a pyOpenSSL connection (RawFTP.reply reads replies so)."""

    def __init__(self, connection: SSL.Connection):
        self._connection = connection
        self._buffer = b""

    def readline(self) -> bytes:
        while b"\n" not in self._buffer:
            try:
                chunk = self._connection.recv(4096)
            except SSL.ZeroReturnError:
                chunk = b""
            if not chunk:
                break
            self._buffer += chunk
        line, newline, self._buffer = self._buffer.partition(b"\n")
        return line + newline

    def close(self) -> None:
        pass


def tls_received(conn: socket.socket, context: ssl.SSLContext, session: ssl.SSLSession | None = None) -> bytes:
    """A TLS handshake on the data connection `conn` offering `session` (None: a full
    handshake), then everything read until the server closes it. b"" when the server
    drops it as the handshake ends (under TLS 1.2 the client's handshake fails then,
    under TLS 1.3 it has finished first and the first read sees the reset)."""
    try:
        tls = context.wrap_socket(conn, server_hostname="127.0.0.1", session=session)
    except (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
        conn.close()
        return b""
    chunks = []
    try:
        while chunk := tls.recv(65536):
            chunks.append(chunk)
    except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
        pass
    finally:
        tls.close()
    return b"".join(chunks)


def read_all(conn: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    conn.close()
    return b"".join(chunks)
