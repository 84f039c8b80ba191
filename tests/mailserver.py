"""A real Dovecot IMAP server for tests, on 127.0.0.1 high ports with its own
config, certificate and Maildir (nothing under /etc is touched)."""

from __future__ import annotations

import datetime
import imaplib
import os
import shutil
import ssl
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .helpers import free_port, wait_for_port

DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"
USER = "partner"
PASSWORD = "imap-password-1"


def self_signed(directory: Path, hostname: str = "localhost") -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    return cert_path, key_path


@dataclass
class MailServer:
    directory: Path
    imap_port: int  # plain, STARTTLS offered
    imaps_port: int  # implicit TLS
    process: subprocess.Popen | None = None

    @property
    def maildir(self) -> Path:
        return self.directory / "mail" / USER

    def start(self) -> None:
        cert, key = self_signed(self.directory)
        (self.directory / "run").mkdir()
        (self.directory / "state").mkdir()
        mail = self.directory / "mail"
        mail.mkdir()
        shutil.chown(mail, "nobody", "nogroup")
        (self.directory / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        config = self.directory / "dovecot.conf"
        config.write_text(
            f"""
base_dir = {self.directory}/run
state_dir = {self.directory}/state
log_path = {self.directory}/dovecot.log
protocols = imap
listen = 127.0.0.1
mail_location = maildir:{mail}/%u
first_valid_uid = 1
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
disable_plaintext_auth = no
auth_mechanisms = plain login
passdb {{
  driver = passwd-file
  args = {self.directory}/passwd
}}
userdb {{
  driver = static
  args = uid=nobody gid=nogroup home={mail}/%u
}}
service imap-login {{
  inet_listener imap {{
    port = {self.imap_port}
  }}
  inet_listener imaps {{
    port = {self.imaps_port}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
service imap-login {{
  chroot =
}}
namespace inbox {{
  inbox = yes
  mailbox Archive {{
    auto = create
  }}
}}
"""
        )
        self.process = subprocess.Popen(
            [DOVECOT, "-F", "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        wait_for_port(self.imap_port, self.process)
        wait_for_port(self.imaps_port, self.process)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        if self.process and self.process.stderr:
            self.process.stderr.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def client(self) -> imaplib.IMAP4_SSL:
        """A stdlib IMAP client, signed in (for arranging and checking)."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        conn = imaplib.IMAP4_SSL("127.0.0.1", self.imaps_port, ssl_context=context)
        conn.login(USER, PASSWORD)
        return conn

    def deliver(self, message: bytes, folder: str = "INBOX") -> None:
        conn = self.client()
        try:
            conn.append(folder, "", imaplib.Time2Internaldate(time.time()), message)
        finally:
            conn.logout()

    def flags(self, folder: str = "INBOX") -> list[tuple[int, str]]:
        """(uid, flags) of every message in `folder`."""
        conn = self.client()
        try:
            conn.select(folder)
            _, data = conn.uid("FETCH", "1:*", "(FLAGS)")
            result = []
            for line in data:
                if not line:
                    continue
                text = line.decode()
                uid = int(text.split("UID ")[1].split()[0].rstrip(")"))
                result.append((uid, text.split("FLAGS (")[1].split(")")[0]))
            return result
        finally:
            conn.logout()


def start_mail_server() -> MailServer:
    """Start Dovecot in a folder of its own: its unprivileged processes must be able
    to reach it, and pytest's temporary folders are private to root."""
    directory = Path(tempfile.mkdtemp(prefix="appliance-dovecot-"))
    os.chmod(directory, 0o755)
    server = MailServer(directory, free_port(), free_port())
    server.start()
    return server
