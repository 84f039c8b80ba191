"""The appliance's TLS: the certificate (a configured one, or a self-signed one
the data dir generates at setup), one server context for HTTPS, and a context of
its own for each FTPS control connection and its data connections.

Only TLS 1.2 and 1.3 with forward-secret AEAD ciphers. The contexts come from a
reloadable holder, so SIGHUP picks up a renewed certificate without a restart.
"""

from __future__ import annotations

import datetime
import ipaddress
import warnings
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from OpenSSL import SSL, crypto
from twisted.internet import ssl

from ..errors import ConfigError
from .openssl_private import session_reused, set_groups

CIPHERS = (
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
)
# Key-exchange groups of Mozilla's "intermediate" profile (OpenSSL would also offer X448 and P-521).
GROUPS = b"X25519:prime256v1:secp384r1"
# How long a session made on an isolated context may be resumed: the context lives only as long
# as its FTPS control connection, whose data connections must resume it however long it lasts
# (OpenSSL's default is 2 hours); 7 days is the longest a TLS 1.3 ticket may live (RFC 8446 4.6.1).
ISOLATED_SESSION_LIFETIME = 7 * 24 * 3600


def self_signed(hostname: str) -> tuple[bytes, bytes]:
    """A certificate and key (PEM) for `hostname`, localhost and the loopback addresses."""
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(hostname)] if hostname else []
    if hostname != "localhost":
        names.append(x509.DNSName("localhost"))
    for address in ("127.0.0.1", "::1"):
        names.append(x509.IPAddress(ipaddress.ip_address(address)))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname or "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def load_options(certificate: Path, private_key: Path) -> ssl.CertificateOptions:
    """Server options from PEM files (the certificate file may hold the chain)."""
    return _options(_load_material(certificate, private_key))


def _load_material(certificate: Path, private_key: Path) -> tuple:
    """The private key, the leaf certificate and the rest of the chain, as pyOpenSSL objects."""
    try:
        chain = x509.load_pem_x509_certificates(certificate.read_bytes())
        key = serialization.load_pem_private_key(private_key.read_bytes(), password=None)
    except (OSError, ValueError) as e:
        raise ConfigError(f"TLS certificate {certificate} / key {private_key}: cannot load: {e}") from None
    leaf, extra = chain[0], chain[1:]
    return (
        crypto.PKey.from_cryptography_key(key),
        crypto.X509.from_cryptography(leaf),
        [crypto.X509.from_cryptography(c) for c in extra],
    )


def _options(material: tuple, tickets: bool = False) -> ssl.CertificateOptions:
    """Server options (their one context made and restricted) for the key and chain in `material`.
    `tickets`: stateless session tickets (the session travels encrypted to the client) instead of
    sessions kept in the context's cache (TLS 1.2 session IDs, TLS 1.3 stateful tickets)."""
    key, leaf, extra = material
    options = ssl.CertificateOptions(
        privateKey=key,
        certificate=leaf,
        extraCertChain=extra,
        raiseMinimumTo=ssl.TLSVersion.TLSv1_2,
        acceptableCiphers=ssl.AcceptableCiphers.fromOpenSSLCipherString(CIPHERS),
        enableSessions=True,  # FTPS clients resume the control connection's session on data connections
        enableSessionTickets=tickets,
    )
    with warnings.catch_warnings():
        # Twisted's CertificateOptions hands pyOpenSSL X509 and PKey objects to the context, which
        # pyOpenSSL 26 deprecates; nothing to change on our side until Twisted follows.
        warnings.filterwarnings("ignore", "Passing pyOpenSSL (X509|PKey) objects is deprecated", DeprecationWarning)
        context = options.getContext()  # the options keep this one context for every connection
    _restrict_groups(context)
    return options


def _restrict_groups(context: SSL.Context) -> None:
    if not set_groups(context, GROUPS):
        raise ConfigError(f"TLS: this OpenSSL refuses the key-exchange groups {GROUPS.decode()}")


def resumes(data: SSL.Connection, control: SSL.Connection) -> bool:
    """Whether the finished handshake of `data` resumed the session of `control`, both
    connections being on one isolated context (ReloadableTLS.isolated_context).

    TLS 1.2: the session resumed is the control connection's own, master secret and all (a
    full handshake, or the resumption of a session someone else got from a full handshake
    on this context, has a master secret of its own). TLS 1.3: any resumption, since the
    only tickets this context's keys open are those it sent inside the control connection
    and the data connections accepted after it (FTP's data connections send none to a
    connection they refuse). A data connection in another TLS version than its control
    connection's resumed nothing of it."""
    if not session_reused(data):
        return False
    version = data.get_protocol_version_name()
    if version != control.get_protocol_version_name():
        return False
    return version != "TLSv1.2" or data.master_key() == control.master_key()


class ReloadableTLS:
    """The server context factory every TLS listener shares; `reload` re-reads the files."""

    def __init__(self, certificate: Path, private_key: Path):
        self.certificate = certificate
        self.private_key = private_key
        self._material = _load_material(certificate, private_key)
        self._options = _options(self._material)

    def reload(self) -> None:
        material = _load_material(self.certificate, self.private_key)
        self._options = _options(material)
        self._material = material

    def getContext(self) -> SSL.Context:  # the interface TLSMemoryBIOFactory and startTLS use
        return self._options.getContext()

    def isolated_context(self) -> SSL.Context:
        """A new context with the same certificate and settings, whose sessions resume only
        on itself: its own session cache and ticket keys (as vsftpd's context per session
        process). An FTPS control connection and its data connections share one, so a data
        connection that resumes a session of it belongs to that control connection (`resumes`).
        Stateless tickets: nothing piles up in its cache as data connections come and go."""
        context = _options(self._material, tickets=True).getContext()
        context.set_timeout(ISOLATED_SESSION_LIFETIME)
        return context

    def fingerprint(self) -> str:
        cert = x509.load_pem_x509_certificates(self.certificate.read_bytes())[0]
        return cert.fingerprint(hashes.SHA256()).hex(":").upper()
