"""What an administrator's change does to the SFTP and FTP connections already open.

A signed-in connection's FileSession holds the Account it signed in with. When an
admin changes or deletes a profile, or the operator changes an organisation, the
core reads the profile again and, for each of its open connections (found through
core.connections' tickets), either:

- ends it with the reason (the front end's `end` callback: FTP's 421, SSH's
  DISCONNECT), when the profile is deleted or the access policy (core/access.py)
  now refuses it, with the policy's message: the one a new sign-in would get;
  or when the session cannot follow the change: another source or home folder, or
  a quota where there was none (the session's tree and usage are set at sign-in);
- or refreshes the session's account, so permissions, a quota's new figures and the
  source's read-only flag hold from the next command.

A password change leaves open connections alone (see ProfileAdmin.update). Expiry
and a trial's end happen without anyone's change, so every open connection is also
checked every CHECK_INTERVAL seconds.
"""

from __future__ import annotations

from collections import defaultdict

from twisted.internet import task
from twisted.logger import Logger

from ..deferreds import spawn
from ..models import LogEntry, Organisation, Profile
from ..store import Store
from . import access
from .access import AccessPolicy
from .audit import PROTOCOL_NAMES, clean

log = Logger()

CHECK_INTERVAL = 60.0  # seconds between checks of every open connection (expiry, trial ends)
DELETED = "Your account was deleted by an administrator."
DEACTIVATED = access.DISABLED  # the policy's messages, as sign-in says them
EXPIRED = access.EXPIRED
MOVED = "An administrator changed where your files are kept: sign in again."
QUOTA_SET = "An administrator set a quota on your account: sign in again."


def ending(
    profile: Profile | None, organisation: Organisation | None, protocol: str, address: str, now, encrypted: bool = True
) -> str | None:
    """Why a connection signed in as `profile` over `protocol` from `address` (over plain
    text unless `encrypted`) must end now (the message for the client), or None: the
    access policy's answer, as for a new sign-in."""
    if profile is None or organisation is None:
        return DELETED
    refused = access.refusal(profile, organisation, now, protocol=protocol, address=address, encrypted=encrypted)
    return refused.message if refused is not None else None


def cannot_follow(session, profile: Profile) -> str | None:
    """Why an open session cannot take the profile's new settings (end it), or None."""
    before = session.account.profile
    if profile.source_id != before.source_id or profile.home != before.home:
        return MOVED
    quota = profile.quota_bytes is not None or profile.quota_files is not None
    if quota and session.limits.usage is None:
        return QUOTA_SET  # usage was never measured for this session
    return None


class OpenSessions:
    def __init__(
        self,
        store: Store,
        connections,
        audit,
        clock,
        interval: float = CHECK_INTERVAL,
        policy: AccessPolicy | None = None,
    ):
        self._store = store
        self._policy = policy or AccessPolicy(store, clock)
        self._connections = connections
        self._audit = audit
        self._clock = clock
        self._interval = interval
        self._loop: task.LoopingCall | None = None

    def start(self) -> None:
        self._loop = task.LoopingCall(lambda: spawn(self.check(), "checking open sessions"))
        self._loop.clock = self._clock
        self._loop.start(self._interval, now=False)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    async def check(self, *, profile_id: int | None = None, org_id: int | None = None) -> int:
        """Read the profiles of open connections again (one profile's, one
        organisation's, or all) and end or refresh each; returns how many ended."""
        by_profile = defaultdict(list)
        for ticket in self._connections.signed_in(profile_id):
            if org_id is None or ticket.session.account.organisation.id == org_id:
                by_profile[ticket.profile_id].append(ticket)
        ended = 0
        for pid, tickets in by_profile.items():
            account = await self._policy.load(pid)
            profile = account.profile if account is not None else None
            organisation = account.organisation if account is not None else None
            now = self._policy.now()
            for ticket in tickets:
                if ticket.closed or ticket.ended:
                    continue  # went away while the store was read
                why = ending(profile, organisation, ticket.protocol, ticket.address, now, ticket.encrypted)
                if why is None:
                    why = cannot_follow(ticket.session, profile)
                if why is None:
                    ticket.session.refresh(account)
                    continue
                await self._end(ticket, why, deleted=profile is None)
                ended += 1
        return ended

    async def _end(self, ticket, why: str, deleted: bool) -> None:
        account = ticket.session.account
        name = PROTOCOL_NAMES.get(ticket.protocol, ticket.protocol)
        log.info(
            "ending the {protocol} session of {username} from {address}: {why}",
            protocol=name,
            username=account.profile.username,
            address=ticket.address,
            why=why,
        )
        ticket.end_session(why)
        if self._audit is not None:
            await self._audit.record(
                LogEntry(
                    org_id=account.organisation.id,
                    profile_id=None if deleted else account.profile.id,
                    username=account.profile.username,
                    protocol=ticket.protocol,
                    action="profile",
                    remote_address=ticket.address,
                    message=f"{clean(account.profile.username)}'s {name} session from {ticket.address} "
                    f"was ended: {why}",
                )
            )
