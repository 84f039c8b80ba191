"""A raw FTP client over a socket, for protocol-level checks real clients never make."""

from __future__ import annotations

import re
import socket
import ssl


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


def read_all(conn: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    conn.close()
    return b"".join(chunks)
