"""The domain: every rule of the appliance, called by every front end."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol

from ..config import Settings
from ..mail.outbound import Mailer
from ..netcheck import Destinations
from ..storage.registry import Backends
from ..storage.sealed import SealedSecrets
from ..store import Store, queries
from ..threads import Threads
from .access import AccessPolicy
from .accounts import Accounts
from .api_tokens import ApiTokens
from .appliance_settings import ApplianceSettings
from .audit import AuditLog
from .auth import AuthService
from .branding import OrganisationSettings
from .connections import ConnectionLimits, ConnectionSettings
from .dashboard import Dashboard
from .datadir import DataDir
from .files import FilesService
from .files.quota import QuotaTracker
from .files.resumable import ResumableUploads
from .health import Health
from .jobs import Jobs
from .local_folders import LocalFolders
from .mailbox_admin import MailboxAdmin
from .mailboxes import MailboxService
from .metrics import Metrics
from .open_sessions import OpenSessions
from .organisations import Organisations, Profiles
from .passwords import Passwords
from .profile_admin import ProfileAdmin
from .ratelimit import RateLimiter
from .sessions import Sessions
from .shares import Shares
from .signin import SignIn
from .source_admin import SavedSignIns, SourceAdmin
from .storage import StorageUsage
from .throttle import LoginThrottle
from .tls import ReloadableTLS


class StorageFactory(Protocol):
    """How the composition root makes the storage registry (service.py `storage_backends`),
    called once the core's thread pools, data dir and database are there: which backends
    the appliance has is the root's choice, the core only uses them."""

    def __call__(
        self,
        settings: Settings,
        reactor,
        threads: Threads,
        data_dir: DataDir,
        saved_sign_ins: SavedSignIns,
        destinations: Destinations,
    ) -> Backends: ...


@dataclass
class Services:
    """What a front end sees of the core: its services, and nothing below them (no
    store, no thread pools, no data dir). Built by `Core.services()`."""

    settings: Settings  # the config file's; the public host name and [smtp] as they apply: appliance_settings
    reactor: object
    audit: AuditLog
    appliance_settings: ApplianceSettings
    passwords: Passwords
    auth: AuthService
    access: AccessPolicy
    signin: SignIn
    organisations: Organisations
    organisation_settings: OrganisationSettings
    profiles: Profiles
    files: FilesService
    mailboxes: MailboxService
    tls: ReloadableTLS
    jobs: Jobs
    connections: ConnectionLimits
    open_sessions: OpenSessions
    metrics: Metrics
    sessions: Sessions
    dashboard: Dashboard
    mailbox_admin: MailboxAdmin
    profile_admin: ProfileAdmin
    api_tokens: ApiTokens
    source_admin: SourceAdmin
    mailer: Mailer
    accounts: Accounts
    shares: Shares
    uploads: ResumableUploads
    storage: StorageUsage
    local_folders: LocalFolders
    health: Health
    # disk work a front end needs off the reactor: reading a request body Twisted spooled
    work: Callable
    # the SSH host keys the SFTP server offers, by kind
    host_keys: Callable[[], dict[str, bytes]]


@dataclass
class Core(Services):
    """The core services, built once by the composition root, with what only the root
    handles (the data dir, the thread pools, the store). Front ends get `services()`."""

    data_dir: DataDir
    threads: Threads
    store: Store

    def services(self) -> Services:
        """The narrow facade the front ends are built with."""
        return Services(**{field.name: getattr(self, field.name) for field in fields(Services)})

    async def sweep_unfinished_uploads(self) -> None:
        """The start-up sweep: remove what uploads cut short by an earlier stop left in
        every source (temporary files, resumable uploads' stagings)."""
        sources = await self.store.run(queries.all_sources)
        await self.files.sweep(sources)
        await self.uploads.sweep(sources)


def build_core(
    settings: Settings,
    reactor,
    storage: StorageFactory,
    hold_data_dir: bool = False,
    destinations: Destinations | None = None,
    pin: bool = False,
) -> Core:
    """Prepare the data dir, open and migrate the database, wire the services over the
    storage registry `storage` makes (service.py `storage_backends`).

    Synchronous on purpose: it runs once before any listener accepts a connection.
    The daemon holds the data dir (`hold_data_dir`) before touching the database,
    so a second daemon can neither serve nor migrate it. `destinations` checks where
    outbound connections go (a stand-in resolver in tests; the system's by default).
    `pin`: keep the calling thread (the daemon's reactor) and the short-work threads on
    one CPU (threads.py); the daemon asks for it, a core built in a test process not.
    """
    data_dir = DataDir(settings.data_path)
    data_dir.prepare(settings.server.public_hostname)
    if hold_data_dir:
        data_dir.lock()
    threads = Threads(reactor, pin=pin)
    threads.start()
    try:
        return _wire(settings, reactor, data_dir, threads, storage, destinations or Destinations())
    except BaseException:
        threads.stop()  # else its threads keep the process alive after the error is printed
        raise


def _wire(
    settings: Settings,
    reactor,
    data_dir: DataDir,
    threads: Threads,
    storage: StorageFactory,
    destinations: Destinations,
) -> Core:
    store = Store(data_dir.database, threads)
    store.open()
    backends = storage(settings, reactor, threads, data_dir, SavedSignIns(store), destinations)
    connections = ConnectionLimits(
        ConnectionSettings(
            per_address=settings.security.max_connections_per_address,
            unauthenticated=settings.security.max_unauthenticated,
            unauthenticated_per_address=settings.security.max_unauthenticated_per_address,
        )
    )
    metrics = Metrics(connections)
    audit = AuditLog(store, metrics, reactor)
    passwords = Passwords(threads, settings.security.bcrypt_rounds)
    throttle = LoginThrottle(
        reactor, trusted_networks=settings.security.trusted_networks, ipv6_prefix=settings.security.ipv6_prefix
    )
    auth = AuthService(store, audit, throttle, reactor)
    policy = AccessPolicy(store, reactor)
    files = FilesService(threads, audit, QuotaTracker(threads, reactor), data_dir.path, backends)
    appliance_settings = ApplianceSettings(settings, store, SealedSecrets(data_dir.secret_box()), audit, reactor)
    appliance_settings.load()
    mailer = Mailer(appliance_settings, reactor, threads, destinations)
    open_sessions = OpenSessions(store, connections, audit, reactor, policy=policy)
    api_tokens = ApiTokens(store, reactor, audit, policy)
    sessions = Sessions(store, data_dir.token_secret(), reactor, policy, token_usable=api_tokens.still_usable)
    limits = RateLimiter(reactor)  # mail that requests cause: resets, invitations, share links
    folders = LocalFolders(store, threads, data_dir.path, audit)
    accounts = Accounts(store, passwords, audit, mailer, data_dir.token_secret(), appliance_settings, reactor, limits)
    storage = StorageUsage(store, threads, files, reactor)
    return Core(
        settings=settings,
        reactor=reactor,
        data_dir=data_dir,
        threads=threads,
        store=store,
        audit=audit,
        appliance_settings=appliance_settings,
        passwords=passwords,
        auth=auth,
        access=policy,
        signin=SignIn(store, auth, policy, passwords, files, connections, sessions, audit),
        organisations=Organisations(
            store,
            threads,
            passwords,
            audit,
            data_dir.files,
            reactor,
            folders,
            storage=storage,
            open_sessions=open_sessions,
            trial_days=settings.server.trial_days,
            accounts=accounts,
        ),
        organisation_settings=OrganisationSettings(store, threads, audit, data_dir.path, reactor, open_sessions),
        profiles=Profiles(store, passwords, audit, reactor),
        files=files,
        mailboxes=MailboxService(
            store, threads, files, data_dir.secret_box(), settings.mail, reactor, metrics, destinations, policy
        ),
        jobs=Jobs(store, audit, reactor),
        connections=connections,
        open_sessions=open_sessions,
        metrics=metrics,
        sessions=sessions,
        dashboard=Dashboard(store, settings, appliance_settings, data_dir.host_keys(), reactor),
        mailbox_admin=MailboxAdmin(store, threads, data_dir.secret_box(), settings.mail, reactor, destinations, audit),
        profile_admin=ProfileAdmin(store, passwords, reactor, open_sessions, audit, accounts),
        api_tokens=api_tokens,
        source_admin=SourceAdmin(store, threads, files, settings, data_dir.path, reactor, folders, audit, limits),
        mailer=mailer,
        accounts=accounts,
        shares=Shares(
            store,
            files,
            auth,
            passwords,
            audit,
            mailer,
            data_dir.token_secret(),
            accounts.console_url,
            reactor,
            limits,
            policy,
        ),
        uploads=ResumableUploads(
            store,
            threads,
            files,
            audit,
            reactor,
            max_size=settings.uploads.resumable_max_size,
            expire_after=settings.uploads.resumable_expire_hours * 3600,
            sweep_interval=settings.uploads.resumable_sweep_seconds,
            staging_dir=data_dir.path / "uploads" / "staging",
        ),
        storage=storage,
        local_folders=folders,
        health=Health(store, threads, files),
        work=threads.work,
        host_keys=data_dir.host_keys,
        tls=ReloadableTLS(
            Path(settings.tls.certificate) if settings.tls.certificate else data_dir.tls_certificate,
            Path(settings.tls.private_key) if settings.tls.private_key else data_dir.tls_key,
        ),
    )
