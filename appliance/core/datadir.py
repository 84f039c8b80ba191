"""The data dir: database, SSH host keys, the token-signing secret, the key that
encrypts secrets at rest, and the default local sources. Created on first use
(mode 0750, key files 0600) and kept across restarts."""

from __future__ import annotations

import fcntl
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from ..errors import ConfigError

HOST_KEY_TYPES = ("ed25519", "ecdsa", "rsa")  # generated at first use and kept
# Offered to clients and shown in the connect dialog. ECDSA signs on a NIST curve, which
# ssh-audit fails; its key is kept so an install can offer it again, but no current client
# needs it (OpenSSH has had ed25519 since 6.5).
OFFERED_HOST_KEY_TYPES = ("ed25519", "rsa")


def _generate_host_key(kind: str) -> bytes:
    if kind == "ed25519":
        key = ed25519.Ed25519PrivateKey.generate()
    elif kind == "ecdsa":
        key = ec.generate_private_key(ec.SECP256R1())
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=3072)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )


def _write_private(path: Path, data: bytes) -> None:
    """Write a secret file atomically with mode 0600."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


@dataclass
class DataDir:
    path: Path

    @property
    def database(self) -> Path:
        return self.path / "appliance.db"

    @property
    def files(self) -> Path:
        """Where default local sources live."""
        return self.path / "files"

    @property
    def tls_certificate(self) -> Path:
        return self.path / "tls" / "cert.pem"

    @property
    def tls_key(self) -> Path:
        return self.path / "tls" / "key.pem"

    def host_key_path(self, kind: str) -> Path:
        return self.path / "ssh" / f"ssh_host_{kind}_key"

    def prepare(self, hostname: str = "localhost") -> None:
        """Create what is missing; raise ConfigError saying what is wrong."""
        try:
            self.path.mkdir(mode=0o750, parents=True, exist_ok=True)
            (self.path / "ssh").mkdir(mode=0o700, exist_ok=True)
            (self.path / "tls").mkdir(mode=0o700, exist_ok=True)
            self.files.mkdir(mode=0o750, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"data dir {self.path}: cannot create it: {e.strerror}") from None
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise ConfigError(f"data dir {self.path}: not writable by this user")
        for kind in HOST_KEY_TYPES:
            path = self.host_key_path(kind)
            if not path.exists():
                _write_private(path, _generate_host_key(kind))
        if not self.tls_certificate.exists() or not self.tls_key.exists():
            from .tls import self_signed

            certificate, key = self_signed(hostname)
            _write_private(self.tls_key, key)
            _write_private(self.tls_certificate, certificate)
        for name, make in (
            ("token.key", lambda: secrets.token_hex(32).encode()),
            ("secrets.key", Fernet.generate_key),
        ):
            if not (self.path / name).exists():
                _write_private(self.path / name, make())

    def lock(self) -> int:
        """Hold the data dir for this daemon; refuse if another one serves it.

        Returns the descriptor that holds the lock (released when the process ends).
        """
        path = self.path / "appliance.pid"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ConfigError(f"data dir {self.path}: another appliance (pid {holder}) is serving it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def in_use(self) -> bool:
        """Whether a daemon holds the data dir now."""
        path = self.path / "appliance.pid"
        if not path.exists():
            return False
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    def problems(self) -> list[str]:
        """What `appliance check` reports about this data dir (no changes made)."""
        found = []
        try:
            if not self.path.exists():
                return [f"data dir {self.path}: does not exist (run `appliance setup`)"]
        except PermissionError:
            return [
                f"data dir {self.path}: cannot reach it: Permission denied (a folder above it is closed to this user)"
            ]
        if not os.access(self.path, os.W_OK | os.X_OK):
            found.append(f"data dir {self.path}: not writable by this user")
        for name in [f"ssh/ssh_host_{k}_key" for k in HOST_KEY_TYPES] + ["token.key", "secrets.key"]:
            path = self.path / name
            if not path.exists():
                found.append(f"{path}: missing (it is created on the next start)")
            elif path.stat().st_mode & 0o077:
                found.append(f"{path}: readable by others; run chmod 600 {path}")
        for check in (self.token_secret, self.secret_box, lambda: self.host_keys(HOST_KEY_TYPES)):
            try:
                check()
            except ConfigError as e:
                found.append(str(e))
            except OSError:
                pass  # missing or unreadable: said above
        if not self.database.exists():
            found.append(f"{self.database}: no database yet (run `appliance setup`)")
        else:
            from ..store.db import problems

            found.extend(problems(self.database))
        return found

    def host_keys(self, kinds=OFFERED_HOST_KEY_TYPES) -> dict[str, bytes]:
        """The private host keys the SFTP server offers, by kind (ConfigError for a damaged one)."""
        keys = {}
        for kind in kinds:
            path = self.host_key_path(kind)
            keys[kind] = path.read_bytes()
            try:
                # A damaged file fails to parse; OpenSSL's check of an RSA key's primes (a
                # quarter of a second for 3072 bits) is left to Twisted, which loads the key to
                # serve it, for a key this data dir made and keeps at mode 0600.
                serialization.load_ssh_private_key(keys[kind], None, unsafe_skip_rsa_key_validation=True)
            except (ValueError, TypeError, UnsupportedAlgorithm):
                raise ConfigError(
                    f"{path}: not an SSH private key (damaged?); restore it from a backup, or delete it to make "
                    "a new one (clients then warn that the host key changed)"
                ) from None
        return keys

    def token_secret(self) -> bytes:
        path = self.path / "token.key"
        secret = path.read_bytes().strip()
        if len(secret) < 32:  # setup writes 64 hex digits; an empty key would sign tokens anyone can make
            raise ConfigError(
                f"{path}: empty or too short (damaged?); restore it from a backup, "
                "or delete it to make a new one (everyone signed in to the console is signed out)"
            )
        return secret

    def secret_box(self) -> SecretBox:
        path = self.path / "secrets.key"
        try:
            return SecretBox(path.read_bytes().strip())
        except ValueError:
            raise ConfigError(
                f"{path}: not a key this appliance made (damaged?); restore it from a backup "
                "(the stored passwords of sources and mailboxes need it)"
            ) from None


class SecretBox:
    """Encrypts secrets at rest (source and mailbox passwords) with the data dir's key."""

    def __init__(self, key: bytes):
        self._fernet = Fernet(key)

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str) -> str:
        return self._fernet.decrypt(token.encode()).decode()
