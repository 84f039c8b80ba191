"""The composition root: builds the core and one listening service per endpoint,
all on one reactor, as one MultiService."""

from __future__ import annotations

import contextlib
import errno
import os

from twisted.application import service
from twisted.internet import defer, endpoints
from twisted.internet.error import CannotListenError
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOFactory

from .config import Settings
from .core import Core, Services, build_core
from .core.datadir import DataDir
from .core.source_admin import SavedSignIns
from .deferreds import spawn
from .errors import ConfigError
from .netcheck import Destinations
from .storage.local.backend import LocalSources
from .storage.registry import Backends
from .storage.s3.backend import S3Homes
from .storage.s3.client import S3Sources
from .storage.s3.credentials import WebIdentities
from .storage.sealed import SealedSecrets
from .storage.sftp.backend import SftpHomes
from .storage.sftp.client import RemoteSources
from .systemd import notify
from .threads import Threads

log = Logger()


def parse_endpoint(reactor, description: str, what: str):
    """A server endpoint from its Twisted string, or ConfigError naming it."""
    try:
        return endpoints.serverFromString(reactor, description)
    except OSError as e:  # e.g. ssl:443:privateKey=... naming a file that is not there
        reason = f"{e.strerror}: {e.filename}" if e.filename else str(e)
        raise ConfigError(f"[listen] {what}: {description!r} cannot be used ({reason})") from None
    except Exception as e:  # noqa: BLE001 - the endpoint parsers raise many kinds for a bad string
        raise ConfigError(f"[listen] {what}: {description!r} is not a valid endpoint string ({e})") from None


def choose_another(what: str) -> str:
    """How to give a listener another endpoint, in words (`what`: HTTP, SFTP, OPS, ...)."""
    key = what.lower()
    return (
        f"choose another endpoint with `appliance serve --{key} tcp:PORT:interface=ADDRESS`, the environment "
        f"variable APPLIANCE_LISTEN_{key.upper()}=tcp:PORT:interface=ADDRESS or [listen] {key} in the "
        "config file"
    )


async def listen(endpoint, factory, description: str, what: str):
    """Listen on `endpoint`; ConfigError naming it when it cannot (a port in use, ...)."""
    try:
        return await endpoint.listen(factory)
    except CannotListenError as e:
        reason = getattr(e.socketError, "strerror", None) or str(e.socketError)
        hint = ""
        if getattr(e.socketError, "errno", None) == errno.EADDRINUSE:
            hint = "; another program uses that port: stop it, or " + choose_another(what)
        raise ConfigError(f"cannot listen for {what} on {description}: {reason}{hint}") from None
    except Exception as e:  # noqa: BLE001 - e.g. a missing systemd socket or TLS key
        raise ConfigError(f"cannot listen for {what} on {description}: {e}") from None


async def listen_problems(endpoints: list[tuple[object, str, str]]) -> list[str]:
    """Try each (endpoint, description, what) and close it again: what `serve` would
    meet when listening (a port in use, a privileged port, an address not on this host)."""
    from twisted.internet.protocol import Factory

    found = []
    for endpoint, description, what in endpoints:
        try:
            port = await listen(endpoint, Factory(), description, what)
        except ConfigError as e:
            found.append(str(e))
        else:
            await defer.maybeDeferred(port.stopListening)
    return found


class ListenerService(service.Service):
    """Listens on one endpoint; `listening` fires when up, or fails with ConfigError."""

    def __init__(self, endpoint, description: str, what: str, factory):
        self.endpoint = endpoint
        self.description = description
        self.what = what
        self.factory = factory
        self.port = None
        self.listening: defer.Deferred | None = None

    def startService(self) -> None:
        super().startService()
        self.listening = defer.Deferred.fromCoroutine(self._listen())

    async def _listen(self):
        self.port = await listen(self.endpoint, self.factory, self.description, self.what)
        log.info("{what} listening on {where}", what=self.what, where=self.description)
        return self.port

    def stopService(self):
        super().stopService()
        if self.port is not None:
            port, self.port = self.port, None
            return port.stopListening()
        return None


class ApplianceService(service.MultiService):
    """The daemon: listeners plus start-up housekeeping."""

    def __init__(self, core: Core):
        super().__init__()
        self.core = core
        self.listeners: list[ListenerService] = []

    def console_url(self) -> str | None:
        """Where a person opens the console: the first HTTPS (else HTTP) listener that is
        up, by the address it listens on (the public hostname when that is every address)."""
        for what, scheme in (("HTTPS", "https"), ("HTTP", "http")):
            for listener in self.listeners:
                if listener.what != what or listener.port is None:
                    continue
                address = listener.port.getHost()
                host = getattr(address, "host", "")
                port = getattr(address, "port", None)
                if port is None:  # a socket-activated or UNIX listener: no address of its own
                    continue
                if host in ("", "0.0.0.0", "::"):
                    host = self.core.appliance_settings.public_host
                elif ":" in host:
                    host = f"[{host}]"
                default = 443 if scheme == "https" else 80
                return f"{scheme}://{host}" + ("" if port == default else f":{port}") + "/"
        return None

    async def announce(self) -> None:
        """One line when the daemon is up: the console's address, and what to do first."""
        url = self.console_url()
        if url is None:
            return
        if await self.core.organisations.initialized():
            log.info("Ready: open the console at {url}", url=url)
        else:
            log.info(
                "Ready: open the console at {url} to set up the appliance (first run: it asks for the first "
                "organisation and its admin; or run `appliance setup`)",
                url=url,
            )

    def add_listener(self, listener: ListenerService) -> None:
        self.listeners.append(listener)
        listener.setServiceParent(self)

    def startService(self) -> None:
        super().startService()
        spawn(self.core.sweep_unfinished_uploads(), "sweeping unfinished uploads")
        spawn(self.core.mailboxes.start(), "starting mailbox polling")
        self.core.jobs.start()
        self.core.uploads.start()
        self.core.storage.start()
        self.core.open_sessions.start()

    async def ready(self) -> None:
        """Wait until every listener is up; raise one ConfigError naming every
        listener that failed, one per line (no failure is left unhandled)."""
        results = await defer.DeferredList([listener.listening for listener in self.listeners], consumeErrors=True)
        failed = [result.getErrorMessage() for ok, result in results if not ok]
        if failed:
            raise ConfigError("\n".join(failed))

    def stopService(self):
        return defer.Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        """Drain: refuse new sign-ins, stop listening, give uploads in flight a grace
        period, abort the rest (no temporary file is left), then close the database."""
        core = self.core
        core.auth.closing = True
        notify("STOPPING=1")
        core.mailboxes.stop()
        core.jobs.stop()
        core.uploads.stop()
        core.storage.stop()
        core.open_sessions.stop()
        await defer.maybeDeferred(super().stopService)
        await core.files.drain(core.reactor, core.settings.server.shutdown_grace)
        await core.audit.flush()  # rows that linger (core/audit.py LINGER) too
        core.threads.stop()
        core.store.close()


def storage_backends(
    settings: Settings,
    reactor,
    threads: Threads,
    data_dir: DataDir,
    saved_sign_ins: SavedSignIns,
    destinations: Destinations,
) -> Backends:
    """The storage registry the core is built over (core.StorageFactory): local folders,
    remote SFTP servers and S3 buckets, each reaching only the hosts `destinations` allows."""
    allow_loopback = settings.sources.allow_loopback
    secrets = data_dir.secret_box()
    identities = WebIdentities(reactor, saved_sign_ins, SealedSecrets(secrets), allow_loopback, destinations)
    return Backends(
        LocalSources(threads, data_dir.path),
        sftp=SftpHomes(RemoteSources(reactor, threads, secrets, allow_loopback, destinations)),
        s3=S3Homes(S3Sources(reactor, threads, secrets, allow_loopback, identities, destinations), threads),
    )


def build_service(settings: Settings, reactor) -> ApplianceService:
    """Everything the daemon runs, ready to start."""
    from .frontends.ftp import FtpCore, ftp_factory
    from .frontends.http import http_site, ops_site
    from .frontends.http.redirect import redirect_site
    from .frontends.sftp import SftpCore, sftp_factory

    def sftp(services: Services):
        return sftp_factory(SftpCore(services.settings, services.reactor, services.signin, services.host_keys))

    def ftp(services: Services):
        return ftp_factory(FtpCore(services.settings, services.reactor, services.signin, services.tls))

    for line in settings.retired_in_use():
        log.warn("{line}", line=line)
    # Parse every endpoint before touching the data dir, so a typo fails fast.
    planned = []
    for what, descriptions, make in (
        (
            "HTTP",
            settings.listen.http,
            redirect_site if settings.listen.https and settings.tls.redirect_http else http_site,
        ),
        ("HTTPS", settings.listen.https, lambda core: TLSMemoryBIOFactory(core.tls, False, http_site(core))),
        ("SFTP", settings.listen.sftp, sftp),
        ("FTP", settings.listen.ftp, ftp),
        ("ops", settings.listen.ops, ops_site),
    ):
        for description in descriptions:
            planned.append((parse_endpoint(reactor, description, what.lower()), description, what, make))
    core = build_core(
        settings,
        reactor,
        storage_backends,
        hold_data_dir=True,
        pin=settings.server.pin_reactor,
    )
    daemon = ApplianceService(core)
    # what the front ends see: no store, no thread pools, no data dir; SFTP and FTP a few services of it
    services = core.services()
    factories = {}
    for endpoint, description, what, make in planned:
        if what not in factories:
            factories[what] = make(services)
        daemon.add_listener(ListenerService(endpoint, description, what, factories[what]))
    control = control_listener(reactor, core.data_dir.path, services)
    if control is not None:
        daemon.add_listener(control)
    return daemon


def control_listener(reactor, data_dir, services) -> ListenerService | None:
    """The control socket in the data dir (frontends/control.py), for the host's own
    command line. A socket left by a daemon that died is removed: this daemon holds the
    data dir, so no other serves it."""
    from .frontends.control import SOCKET_NAME, control_factory

    path = os.path.join(data_dir, SOCKET_NAME)
    if len(os.fsencode(path)) >= 108:  # sockaddr_un's limit
        log.warn("no control socket: its path {path} is too long for a UNIX socket", path=path)
        return None
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    endpoint = endpoints.UNIXServerEndpoint(reactor, path, mode=0o600)
    return ListenerService(endpoint, path, "control", control_factory(services))
