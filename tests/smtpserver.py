"""A real SMTP listener for tests on 127.0.0.1: it speaks enough SMTP for any
client (EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT) and keeps what it receives."""

from __future__ import annotations

import email
import email.policy
import socketserver
import threading
import time


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        server = self.server
        send = lambda line: self.wfile.write(line.encode() + b"\r\n")  # noqa: E731
        send("220 test-smtp ready")
        sender, recipients = None, []
        while True:
            line = self.rfile.readline()
            if not line:
                return
            command = line.decode(errors="replace").strip()
            verb = command[:4].upper()
            if verb in ("EHLO", "HELO"):
                send("250 test-smtp")
            elif verb == "MAIL":
                sender, recipients = command.partition(":")[2].strip(" <>"), []
                send("250 ok")
            elif verb == "RCPT":
                recipients.append(command.partition(":")[2].strip(" <>"))
                send("250 ok")
            elif verb == "DATA":
                send("354 go ahead")
                lines = []
                while True:
                    data = self.rfile.readline()
                    if data in (b".\r\n", b".\n", b""):
                        break
                    lines.append(data[1:] if data.startswith(b"..") else data)
                server.messages.append(
                    (sender, recipients, email.message_from_bytes(b"".join(lines), policy=email.policy.default))
                )
                send("250 queued")
            elif verb == "QUIT":
                send("221 bye")
                return
            else:
                send("250 ok")


class SmtpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the daemon sends a mail a connection: a link to 50 recipients is 50 at once

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.messages: list = []
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def wait_for(self, recipient: str, timeout: float = 20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for _sender, recipients, message in self.messages:
                if recipient in recipients:
                    return message
            time.sleep(0.05)
        raise TimeoutError(f"no mail for {recipient}")

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
