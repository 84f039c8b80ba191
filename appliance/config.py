"""Settings: a TOML file, then APPLIANCE_<SECTION>_<KEY> environment overrides.

Every key has a default (the embedded default `make run` uses: data in ./var,
HTTP on 127.0.0.1:8000, SFTP on 2222, FTP on 2121). Unknown sections or keys and
values of the wrong type are refused with a message naming the key and where it
came from.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError
from .text import control_characters

ENV_PREFIX = "APPLIANCE_"

# Keys a release took away: a config or environment that still sets one is read as before
# but the key does nothing, and the daemon says so once at start (Settings.retired_in_use),
# so an upgrade never stops a daemon over a tuning it no longer needs.
RETIRED = {
    ("server", "idle_spin_us"): "the reactor is Twisted's own again; on a VM, set the guest's halt polling "
    'instead (README, "Small files on a virtual machine")',
    ("server", "thread_wait_us"): "every job of a thread comes back through the event loop",
}


@dataclass
class ServerSettings:
    data_dir: str = "var"  # database, keys, TLS certificate, default local sources (relative: to the working dir)
    public_hostname: str = "localhost"  # shown in the connect dialog, used in mail links
    allow_signup: bool = False  # may new organisations register themselves
    trial_days: int = 14  # length of a new organisation's trial
    shutdown_grace: int = 30  # seconds transfers in flight get to finish on SIGTERM
    pin_reactor: bool = True  # keep the reactor, database and short disk work on one CPU (bulk work uses all)


@dataclass
class ListenSettings:
    http: list[str] = field(default_factory=lambda: ["tcp:8000:interface=127.0.0.1"])  # plain HTTP (Twisted endpoints)
    https: list[str] = field(default_factory=list)  # endpoints wrapped in the appliance's TLS
    sftp: list[str] = field(default_factory=lambda: ["tcp:2222"])  # endpoints of the SFTP (and scp) server
    ftp: list[str] = field(default_factory=lambda: ["tcp:2121"])  # endpoints of the FTP control port
    ops: list[str] = field(
        default_factory=lambda: ["tcp:9180:interface=127.0.0.1"]
    )  # /healthz, /readyz, /metrics in full (keep it private)


@dataclass
class FtpSettings:
    passive_ports: str = "30000-30100"  # data ports PASV and EPSV offer, low-high from 1024
    masquerade_address: str = ""  # the address PASV announces behind NAT (empty: the local one)
    idle_timeout: int = 600  # seconds a control connection may sit idle
    login_grace_time: int = 60  # seconds to sign in before the connection is closed (421), as [sftp]'s
    transfer_timeout: int = 300  # seconds a data connection may stall
    require_tls: bool = False  # refuse every sign-in before AUTH TLS (organisations and profiles can require it too)
    require_tls_session_reuse: bool = True  # FTPS data connections must resume the control connection's TLS session


@dataclass
class SftpSettings:
    max_sessions_per_connection: int = 10  # SSH channels (sftp, scp) open at once on one connection
    max_open_handles: int = 256  # files and folders one SFTP session may hold open
    login_grace_time: int = 60  # seconds to authenticate before the connection is dropped
    legacy_ciphers: bool = True  # AES-CTR (HMAC-SHA2 encrypt-and-MAC, or EtM after a strict key exchange) for clients without AES-GCM (curl/libssh2 1.10); a client with AES-GCM is still offered AES-GCM alone; false: AES-GCM only


@dataclass
class TlsSettings:
    certificate: str = ""  # PEM (with chain); empty: the self-signed one in the data dir
    private_key: str = ""  # PEM key of the certificate (set both or neither)
    redirect_http: bool = True  # with an HTTPS listener, plain HTTP redirects to it (/healthz, /readyz excepted)


@dataclass
class SecuritySettings:
    bcrypt_rounds: int = 12  # cost of password hashes, 4 to 16
    max_connections_per_address: int = 50  # open connections from one address, all protocols
    max_unauthenticated: int = 100  # connections still signing in, all protocols together
    max_unauthenticated_per_address: int = 10  # connections still signing in from one address
    trusted_networks: list[str] = field(
        default_factory=list
    )  # CIDRs (an office NAT) never banned as a whole for failed sign-ins; still slowed, and banned per username
    ipv6_prefix: int = 64  # failed sign-ins from IPv6 are counted and banned per network of this many bits (48-128)


@dataclass
class MailSettings:
    allow_loopback: bool = False  # may mailboxes poll a server on this host
    max_message_bytes: int = 50_000_000  # larger messages are left on the server
    batch: int = 100  # messages filed per run at most; the rest wait for the next run


@dataclass
class SourcesSettings:
    allow_loopback: bool = False  # may sources point at a server on this host
    local_roots: list[str] = field(default_factory=list)  # absolute folders local sources may live under


@dataclass
class SmtpSettings:
    host: str = "localhost"  # outbound mail server (password resets, invitations)
    port: int = 25  # its port
    starttls: bool = False  # upgrade the connection with STARTTLS
    username: str = ""  # empty: no authentication
    password: str = ""  # for username
    sender: str = "portal@localhost"  # From: address of the appliance's mail


@dataclass
class UploadsSettings:
    resumable_max_size: int = 1 << 40  # bytes a resumable (tus) upload may have (Tus-Max-Size)
    resumable_expire_hours: int = 24  # a resumable upload untouched this long is removed
    resumable_sweep_seconds: int = 600  # how often expired resumable uploads are looked for


@dataclass
class Settings:
    server: ServerSettings = field(default_factory=ServerSettings)
    listen: ListenSettings = field(default_factory=ListenSettings)
    ftp: FtpSettings = field(default_factory=FtpSettings)
    sftp: SftpSettings = field(default_factory=SftpSettings)
    tls: TlsSettings = field(default_factory=TlsSettings)
    security: SecuritySettings = field(default_factory=SecuritySettings)
    mail: MailSettings = field(default_factory=MailSettings)
    sources: SourcesSettings = field(default_factory=SourcesSettings)
    smtp: SmtpSettings = field(default_factory=SmtpSettings)
    uploads: UploadsSettings = field(default_factory=UploadsSettings)
    source_file: str | None = None  # where the TOML came from, for messages
    # (section, key) the file or the environment set -> where: the file's path, "environment variable NAME"
    explicit: dict[tuple[str, str], str] = field(default_factory=dict)
    # retired keys (RETIRED) the file or the environment still sets -> where, as `explicit`
    retired: dict[tuple[str, str], str] = field(default_factory=dict)

    def retired_in_use(self) -> list[str]:
        """One line per retired key still set: where, and why it no longer does anything."""
        return [
            f"{where}: [{section}] {key} is retired and does nothing: {RETIRED[section, key]}; remove it"
            for (section, key), where in sorted(self.retired.items())
        ]

    def set_by(self, section: str, key: str) -> str | None:
        """Where [section] key is set: the config file's path or "environment variable
        APPLIANCE_..."; None when it has its default (which the operator may change in the
        console, for the keys the core lets the console keep)."""
        return self.explicit.get((section, key))

    @property
    def data_path(self) -> Path:
        return Path(self.server.data_dir).expanduser().absolute()

    def passive_port_range(self) -> range:
        """The FTP passive range as a range object (validated in `load`)."""
        low, high = _parse_port_range(self.ftp.passive_ports, "[ftp] passive_ports")
        return range(low, high + 1)


def _parse_port_range(text: str, where: str) -> tuple[int, int]:
    try:
        low_s, high_s = text.split("-", 1)
        low, high = int(low_s), int(high_s)
    except ValueError:
        raise ConfigError(f"{where}: expected a range like 30000-30100, got {text!r}") from None
    if not (1024 <= low <= high <= 65535):
        raise ConfigError(f"{where}: {text!r} must be two ports from 1024 to 65535, low first")
    return low, high


def _coerce(value, default, where: str):
    """Turn a TOML or environment value into the type of the key's default."""
    kind = type(default)
    if isinstance(value, str) and kind is not str:
        text = value.strip()
        if kind is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off", ""):
                return False
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        if kind is int:
            try:
                return int(text)
            except ValueError:
                raise ConfigError(f"{where}: expected a whole number, got {value!r}") from None
        if kind is list:
            if text.startswith("["):
                try:
                    return _coerce(tomllib.loads(f"v = {text}")["v"], default, where)
                except tomllib.TOMLDecodeError as e:
                    raise ConfigError(f"{where}: not a list: {e}") from None
            return [part.strip() for part in text.split(",") if part.strip()]
    if kind is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{where}: expected a whole number, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    if kind is list:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return value


def _section_fields(settings: Settings) -> dict[str, object]:
    return {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(settings)
        if dataclasses.is_dataclass(getattr(settings, f.name))
    }


def load(path: str | os.PathLike | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Read the TOML file (if any), apply environment overrides, validate."""
    environ = os.environ if environ is None else environ
    settings = Settings()
    sections = _section_fields(settings)
    explicit: dict[tuple[str, str], str] = {}
    retired: dict[tuple[str, str], str] = {}
    if path is not None:
        settings.source_file = str(path)
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from None
        except UnicodeDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML: not UTF-8 (byte {e.start}); save it as UTF-8") from None
        except OSError as e:
            raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
        for section_name, values in data.items():
            section = sections.get(section_name)
            if section is None or not isinstance(values, dict):
                known = ", ".join(f"[{s}]" for s in sections)
                raise ConfigError(f"{path}: unknown section [{section_name}] (known: {known})")
            for key, value in values.items():
                where = f"{path}: [{section_name}] {key}"
                if (section_name, key) in RETIRED:
                    retired[(section_name, key)] = str(path)
                    continue
                if not hasattr(section, key):
                    raise ConfigError(f"{where}: unknown key")
                setattr(section, key, _coerce(value, getattr(section, key), where))
                explicit[(section_name, key)] = str(path)
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX) :].lower()
        section_name, _, key = rest.partition("_")
        section = sections.get(section_name)
        if (section_name, key) in RETIRED:
            retired[(section_name, key)] = f"environment variable {name}"
            continue
        if section is None or not key or not hasattr(section, key):
            raise ConfigError(f"environment variable {name}: no such setting")
        setattr(section, key, _coerce(value, getattr(section, key), f"environment variable {name}"))
        explicit[(section_name, key)] = f"environment variable {name}"
    settings.explicit = explicit
    settings.retired = retired
    _validate(settings)
    return settings


# Bounds of whole-number keys, (lowest, highest or None); any other is at least 1.
_BOUNDS = {
    ("server", "trial_days"): (0, None),
    ("server", "shutdown_grace"): (0, None),
    ("smtp", "port"): (1, 65535),
    ("security", "bcrypt_rounds"): (4, 16),
    ("security", "ipv6_prefix"): (48, 128),
}


def _validate(settings: Settings) -> None:
    origin = settings.source_file or "settings"
    for section_name, section in _section_fields(settings).items():
        for f in dataclasses.fields(section):
            value = getattr(section, f.name)
            if type(value) is not int:
                continue
            low, high = _BOUNDS.get((section_name, f.name), (1, None))
            if value < low or (high is not None and value > high):
                bounds = f"at least {low}" if high is None else f"from {low} to {high}"
                raise ConfigError(f"{origin}: [{section_name}] {f.name}: must be {bounds}, got {value}")
    _parse_port_range(settings.ftp.passive_ports, f"{origin}: [ftp] passive_ports")
    masquerade = settings.ftp.masquerade_address.strip()
    if masquerade:
        try:
            ipaddress.IPv4Address(masquerade)
        except ValueError:
            raise ConfigError(
                f"{origin}: [ftp] masquerade_address: {masquerade!r} is not an IPv4 address "
                "(PASV announces an IPv4 address)"
            ) from None
    if bool(settings.tls.certificate) != bool(settings.tls.private_key):
        raise ConfigError(f"{origin}: [tls] certificate and private_key go together: set both or neither")
    for name in ("http", "https", "sftp", "ftp", "ops"):
        for endpoint in getattr(settings.listen, name):
            if not endpoint.strip():
                raise ConfigError(f"{origin}: [listen] {name}: an empty endpoint string")
    for network in settings.security.trusted_networks:
        try:
            ipaddress.ip_network(network.strip(), strict=False)
        except ValueError:
            raise ConfigError(
                f"{origin}: [security] trusted_networks: {network!r} is not an address or network "
                "(write it like 192.0.2.0/24 or 2001:db8::/32)"
            ) from None
    for key in ("host", "username", "password", "sender"):
        if control_characters(getattr(settings.smtp, key)):
            raise ConfigError(
                f"{origin}: [smtp] {key}: holds a control character (a line break, a tab or another invisible "
                "code), which would reach the mail server as part of a command: remove it"
            )
    for root in settings.sources.local_roots:
        if not os.path.isabs(root):
            raise ConfigError(f"{origin}: [sources] local_roots: {root!r} is not an absolute path")
