"""The appliance-wide settings the operator may keep in the console instead of the
config file: the public host name (in every link the appliance mails or shows, and in
"How do I connect?") and outbound mail ([smtp]). This one object answers every reader
(links, the connect information, the mailer), so a change applies to the next link and
the next mail, without a restart.

A key's effective value is the config file's (or its APPLIANCE_ variable's) when it
sets the key, and the console cannot change it then; else the console's, kept in the
database; else the key's default. The SMTP password is sealed with the data dir's
secrets.key, opened only for the mail server, and never told: a reply says whether one
is set."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from ..config import Settings, SmtpSettings
from ..errors import Invalid
from ..models import to_iso
from ..netcheck import refusal
from ..storage.sealed import SealedSecrets
from ..store import Store
from ..store import appliance_settings as settings_queries
from . import validation
from .audit import AuditLog, clean
from .authority import require_operator

CONFIG, CONSOLE, DEFAULT = "config", "console", "default"
SECRET = "secret"


@dataclass(frozen=True)
class Setting:
    """One key the console may keep. kind: host (the public host name, a port allowed),
    server (a mail server's name or address), port, bool, email, text, secret."""

    label: str
    kind: str


# (section, key) of config.py -> how it is checked and told; the order of the console's form
SETTINGS: dict[tuple[str, str], Setting] = {
    ("server", "public_hostname"): Setting("public host name", "host"),
    ("smtp", "host"): Setting("mail server", "server"),
    ("smtp", "port"): Setting("mail server port", "port"),
    ("smtp", "starttls"): Setting("STARTTLS", "bool"),
    ("smtp", "sender"): Setting("sender address", "email"),
    ("smtp", "username"): Setting("mail server username", "text"),
    ("smtp", "password"): Setting("mail server password", SECRET),
}
SECTIONS = ("server", "smtp")
PLACEHOLDER_HOSTS = {"", "localhost", "localhost.localdomain"}

HOST_HINT = "Enter the host name people reach the appliance at, like files.example.com (or files.example.com:8443)."
SERVER_HINT = "Enter the mail server's host name or address, like smtp.example.com."
PORT_HINT = "Enter a port from 1 to 65535."
PUBLIC_HOSTNAME_WARNING = (
    "The public host name is {host}: invitations, password resets, share links and \u201cHow do I connect?\u201d "
    "name a host nobody else can reach."
)
MAIL_WARNING = (
    "Outbound mail is not set up: the appliance mails through localhost:25, where usually no mail server "
    "listens, so invitations and password resets do not arrive."
)

_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
_BRACKETED = re.compile(r"\[([0-9A-Fa-f:.]+)\](?::([0-9]{1,5}))?")


def split_host(text: str) -> tuple[str, int | None]:
    """("files.example.com", 8443) for "files.example.com:8443", ("[2001:db8::1]", None) for
    "[2001:db8::1]"; a text that is no host[:port] comes back whole, without a port."""
    bracketed = _BRACKETED.fullmatch(text)
    if bracketed:
        return f"[{bracketed.group(1)}]", int(bracketed.group(2)) if bracketed.group(2) else None
    name, colon, port = text.rpartition(":")
    if colon and name and ":" not in name and port.isdigit() and 1 <= int(port) <= 65535:
        return name, int(port)
    return text, None


def _is_name_or_ipv4(host: str) -> bool:
    return len(host) <= 253 and bool(_NAME.fullmatch(host))


def _host_problem(value: str, *, port_allowed: bool) -> str | None:
    """What is wrong with a host name as the operator typed it, in words; None when nothing."""
    hint = HOST_HINT if port_allowed else SERVER_HINT
    if not value:
        return hint
    control = validation.control_problem(value, "The host name")
    if control:
        return control
    if "://" in value:
        return f"Leave out {value.split('://', 1)[0]}://: {hint[0].lower()}{hint[1:]}"
    if any(c in value for c in "/?#"):
        return f"Leave out the path: {hint[0].lower()}{hint[1:]}"
    if "@" in value or any(c.isspace() for c in value):
        return hint
    if port_allowed:
        host, port = split_host(value)
        if port is None and value.rpartition(":")[2].isdigit() and value.count(":") == 1:
            return PORT_HINT
        if host.startswith("["):
            try:
                ipaddress.IPv6Address(host[1:-1])
            except ValueError:
                return hint
            return None
        if ":" in host:
            return "Write an IPv6 address in brackets, like [2001:db8::1]."
        return None if _is_name_or_ipv4(host) else hint
    if value.count(":") == 1:
        return "Enter the port in its own field."
    try:
        address = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return None if _is_name_or_ipv4(value) else hint
    why = refusal(str(address), True)  # the operator's own mail server may be on this host
    return f"Not allowed: {why}." if why else None


class ApplianceSettings:
    """The effective public host name and outbound mail, and the operator's changes to them."""

    def __init__(self, config: Settings, store: Store, sealed: SealedSecrets, audit: AuditLog, clock):
        self._config = config
        self._store = store
        self._sealed = sealed
        self._audit = audit
        self._clock = clock
        self._stored: dict[str, object] = {}

    def load(self) -> None:
        """Read the console's values: at start-up, before anything is served."""
        self._stored = self._store.read_at_start(settings_queries.all_settings)

    # -- what every reader asks -------------------------------------------------------------

    def source(self, section: str, key: str) -> str:
        """Where a key's value comes from: CONFIG, CONSOLE or DEFAULT."""
        if self._config.set_by(section, key) is not None:
            return CONFIG
        return CONSOLE if f"{section}.{key}" in self._stored else DEFAULT

    def _value(self, section: str, key: str):
        if self.source(section, key) == CONSOLE:
            return self._stored[f"{section}.{key}"]
        return getattr(getattr(self._config, section), key)  # the file's, else its default

    @property
    def public_hostname(self) -> str:
        """The host name (with a port when it says one) people reach the appliance at."""
        return self._value("server", "public_hostname")

    @property
    def public_host(self) -> str:
        """The public host name without its port: where SFTP, FTP and HTTPS are reached."""
        return split_host(self.public_hostname)[0]

    def console_url(self) -> str:
        """The console's address in links: the public host name, over HTTPS when the
        appliance serves it, else on the HTTP listener's port; a port the name says wins
        (443: HTTPS, as behind a proxy that serves it; 80: plain HTTP)."""
        host = self.public_hostname
        name, port = split_host(host)
        if port in (80, 443):
            return f"{'https' if port == 443 else 'http'}://{name}"
        scheme = "https" if self._config.listen.https else "http"
        if port is not None or scheme == "https":
            return f"{scheme}://{host}"
        port = next((d.split(":")[1] for d in self._config.listen.http if d.startswith("tcp:")), "80")
        return f"http://{host}" + ("" if port == "80" else f":{port}")

    def smtp(self) -> SmtpSettings:
        """Where outbound mail goes now, without the password (`smtp_password`)."""
        values = {key: self._value("smtp", key) for section, key in SETTINGS if section == "smtp"}
        values["password"] = ""
        return SmtpSettings(**values)

    def smtp_password(self) -> str:
        """The mail server's password, opened (Unavailable when secrets.key changed since)."""
        if self.source("smtp", "password") != CONSOLE:
            return self._config.smtp.password
        return self._sealed.open(self._stored["smtp.password"], "mail server password")

    def warnings(self) -> list[dict]:
        """What the operator should still set: [{setting, message}]."""
        found = []
        host = self.public_host.strip("[]").lower()
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if host in PLACEHOLDER_HOSTS or loopback:
            found.append(
                {
                    "setting": "server.public_hostname",
                    "message": PUBLIC_HOSTNAME_WARNING.format(host=self.public_hostname or "empty"),
                }
            )
        if self.source("smtp", "host") == DEFAULT and self.source("smtp", "port") == DEFAULT:
            found.append({"setting": "smtp.host", "message": MAIL_WARNING})
        return found

    # -- the operator's view and changes ---------------------------------------------------------

    def view(self, account) -> dict:
        """Every setting the console may keep: its effective value (never the password's:
        `set` says whether there is one), where it comes from, whether the console may change
        it (not when the config sets it: `set_by` says where), and the warnings. The operator's only."""
        require_operator(account.profile)
        reply: dict = {section: {} for section in SECTIONS}
        for (section, key), setting in SETTINGS.items():
            source = self.source(section, key)
            item: dict = {"source": source, "editable": source != CONFIG, "set_by": self._config.set_by(section, key)}
            if setting.kind == SECRET:
                item["set"] = bool(self._value(section, key))  # sealed when the console's: told, never opened
            else:
                item["value"] = self._value(section, key)
            reply[section][key] = item
        reply["warnings"] = self.warnings()
        return reply

    def _checked(self, body: Mapping) -> tuple[dict[str, object], list[str], list[str]]:
        """(values to store by key, keys to forget, what changed in words) from a PATCH body,
        or Invalid naming every wrong field."""
        errors: dict[str, list[str]] = {}
        changed: dict[str, object] = {}
        removed: list[str] = []
        told: list[str] = []
        for (section, key), setting in SETTINGS.items():  # other fields are ignored, as every API does
            given = body.get(section)
            if not isinstance(given, Mapping) or key not in given:
                continue
            name, value = f"{section}.{key}", given[key]
            if setting.kind == SECRET and value == "":
                continue  # the form's "leave empty to keep"
            where = self._config.set_by(section, key)
            if where is not None:
                errors[name] = [f"The config file sets {self._label(section, key)} ({where}): change it there."]
                continue
            if value is None:
                if name in self._stored:
                    removed.append(name)
                    told.append(f"{setting.label} back to its default")
                continue
            problem, value = self._problem(setting, value)
            if problem:
                errors[name] = [problem]
                continue
            if setting.kind == SECRET:
                changed[name] = self._sealed.seal(value)
                told.append(f"{setting.label} changed")
            elif self._stored.get(name, dataclasses.MISSING) != value:
                changed[name] = value
                told.append(f"{setting.label} {self._shown(value)}")
        if errors:
            first = next(iter(errors.values()))[0]
            raise Invalid(first if len(errors) == 1 else "Some settings are not valid.", errors)
        return changed, removed, told

    @staticmethod
    def _label(section: str, key: str) -> str:
        return f"[{section}] {key}"

    @staticmethod
    def _shown(value) -> str:
        if isinstance(value, bool):
            return "on" if value else "off"
        return clean(str(value)) if value != "" else "none"

    @staticmethod
    def _problem(setting: Setting, value) -> tuple[str | None, object]:
        """(what is wrong, or None; the value as stored)."""
        if setting.kind == "port":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
                return PORT_HINT, value
            return None, value
        if setting.kind == "bool":
            return (None, value) if isinstance(value, bool) else ("Must be true or false.", value)
        if not isinstance(value, str):
            return "Must be text.", value
        if setting.kind == SECRET:
            if len(value) > 1000:
                return "Use at most 1000 characters.", value
            # it would reach the mail server as more than the password
            return validation.control_problem(value, "The password"), value
        value = value.strip()
        if setting.kind in ("host", "server"):
            return _host_problem(value, port_allowed=setting.kind == "host"), value
        if setting.kind == "email":
            try:
                return None, validation.email(value)
            except Invalid:
                return "Enter the address the appliance's mail comes from, like portal@example.com.", value
        if len(value) > 254:
            return "Use at most 254 characters.", value
        return validation.control_problem(value, "The username"), value

    async def change(self, account, body: Mapping) -> dict:
        """The operator changes settings the config file does not set: each key given is
        stored (null: back to its default; the password's "" keeps it), applied at once and
        audited (a password only as changed). The view after."""
        require_operator(account.profile)
        changed, removed, told = self._checked(body)
        if not changed and not removed:
            return self.view(account)
        now = to_iso(datetime.fromtimestamp(self._clock.seconds(), UTC))
        self._stored = await self._store.run(settings_queries.save_settings, changed, removed, now)
        username = account.profile.username
        await self._audit.acted(
            account, "settings", f"{clean(username)} changed the appliance's settings: {', '.join(told)}"
        )
        return self.view(account)
