"""Connection limits shared by every protocol, and the live session counts.

A front end asks `open(address, protocol)` when a connection arrives and gets a
Ticket (or a refusal with a message to send before hanging up); it calls
`ticket.authenticated()` after sign-in and `ticket.close()` when the connection
ends. Limits: connections per address, and connections still signing in, in
total and per address (like OpenSSH's MaxStartups), so a flood of half-open
handshakes cannot starve real users. A front end that passes `drop` lets a full
sign-in pool hang up a half-open connection of the busiest address to admit a
newcomer from a quieter one. A front end that passes `end` (a callback taking the
message to show) lets the core end a signed-in connection whose profile may no longer
use it (core/open_sessions.py); it hands the connection's FileSession to
`ticket.authenticated(session)` so the core can find it by profile and refresh it.
Each refused sign-in is told to `ticket.sign_in_refused()`, which answers how many
attempts the connection has left (core.auth.ATTEMPTS_PER_CONNECTION, for every protocol).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import PermissionDenied
from .auth import ATTEMPTS_PER_CONNECTION


@dataclass
class ConnectionSettings:
    per_address: int = 50
    unauthenticated: int = 100
    unauthenticated_per_address: int = 10


class Ticket:
    def __init__(
        self,
        limits: ConnectionLimits,
        address: str,
        protocol: str,
        drop: Callable[[], None] | None = None,
        end: Callable[[str], None] | None = None,
    ):
        self._limits = limits
        self.address = address
        self.protocol = protocol
        self.drop = drop  # hangs up this connection (the front end's), so a full pool can evict it
        self.end = end  # ends this signed-in connection, telling the client why (the front end's)
        self.session = None  # the connection's FileSession once signed in (its account: who)
        self.signed_in = False
        self.closed = False
        self.evicted = False
        self.ended = False
        self.encrypted = True  # did the password travel encrypted (FTP: after AUTH TLS)
        self.refused_sign_ins = 0

    def authenticated(self, session=None, encrypted: bool = True) -> None:
        """Signed in; `session`: the connection's FileSession, which the core refreshes
        or ends when an administrator changes its profile; `encrypted`: False for plain FTP,
        which an administrator's later "require TLS" ends."""
        if not self.signed_in and not self.closed:
            self.signed_in = True
            self.session = session
            self.encrypted = encrypted
            self._limits._authenticated(self)

    def sign_in_refused(self) -> int:
        """Count a refused sign-in on this connection; the attempts it has left. At 0 the
        front end says so in its protocol and closes the connection."""
        self.refused_sign_ins += 1
        return max(0, ATTEMPTS_PER_CONNECTION - self.refused_sign_ins)

    @property
    def profile_id(self) -> int | None:
        return self.session.account.profile.id if self.session is not None else None

    def end_session(self, message: str) -> None:
        """End this connection with `message` for the client (once; hang up without one
        when the front end passed no `end`)."""
        if self.ended or self.closed:
            return
        self.ended = True
        try:
            if self.end is not None:
                self.end(message)
            elif self.drop is not None:
                self.drop()
        except Exception:  # noqa: BLE001 - a connection already going away
            pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._limits._closed(self)


class ConnectionLimits:
    def __init__(self, settings: ConnectionSettings | None = None):
        self.settings = settings or ConnectionSettings()
        self._per_address: Counter[str] = Counter()
        self._pending_per_address: Counter[str] = Counter()
        self._pending = 0
        self._signing_in: dict[Ticket, None] = {}  # tickets still signing in, oldest first
        self.evictions = 0  # connections hung up to make room in a full sign-in pool
        self.sessions: Counter[str] = Counter()  # signed-in sessions per protocol, for metrics
        self._signed_in: dict[Ticket, None] = {}  # signed-in connections, for open_sessions

    def open(
        self,
        address: str,
        protocol: str,
        drop: Callable[[], None] | None = None,
        end: Callable[[str], None] | None = None,
    ) -> Ticket:
        """Admit a new connection or raise PermissionDenied with the reason.

        `drop` hangs up the new connection. When the sign-in pool is full, a newcomer
        evicts a droppable connection still signing in from the address holding the most
        of them (the oldest of those) instead of being refused, so half-open connections
        from a handful of addresses cannot lock every user out for the whole login grace.
        """
        limits = self.settings
        if self._per_address[address] >= limits.per_address:
            raise PermissionDenied(f"Too many connections from {address} (at most {limits.per_address}).")
        if self._pending_per_address[address] >= limits.unauthenticated_per_address:
            raise PermissionDenied(f"Too many connections from {address} are signing in at once.")
        if self._pending >= limits.unauthenticated:
            victim = self._victim(address)
            if victim is None:
                raise PermissionDenied("Too many connections are signing in right now; try again shortly.")
            self._evict(victim)
        self._per_address[address] += 1
        self._pending_per_address[address] += 1
        self._pending += 1
        ticket = Ticket(self, address, protocol, drop, end)
        self._signing_in[ticket] = None
        return ticket

    def _victim(self, newcomer: str) -> Ticket | None:
        """The connection to evict: from the address with the most connections signing
        in (never the newcomer's own, which is below its limit), the oldest droppable."""
        busiest = None
        for ticket in self._signing_in:  # oldest first
            if ticket.drop is None or ticket.address == newcomer:
                continue
            if (
                busiest is None
                or self._pending_per_address[ticket.address] > self._pending_per_address[busiest.address]
            ):
                busiest = ticket
        if busiest is None or self._pending_per_address[busiest.address] <= self._pending_per_address[newcomer]:
            return None  # a newcomer may not evict one of an address no busier than its own
        return busiest

    def _evict(self, ticket: Ticket) -> None:
        ticket.evicted = True
        self._unpend(ticket)
        self.evictions += 1
        try:
            ticket.drop()
        except Exception:  # noqa: BLE001 - a connection already going away
            pass

    def _authenticated(self, ticket: Ticket) -> None:
        if ticket.evicted:
            return  # signed in while being hung up: it is going away
        self._unpend(ticket)
        self.sessions[ticket.protocol] += 1
        self._signed_in[ticket] = None

    def _closed(self, ticket: Ticket) -> None:
        if ticket.signed_in and not ticket.evicted:
            self.sessions[ticket.protocol] -= 1
            self._signed_in.pop(ticket, None)
        elif not ticket.evicted:
            self._unpend(ticket)
        self._per_address[ticket.address] -= 1
        if self._per_address[ticket.address] <= 0:
            del self._per_address[ticket.address]

    def _unpend(self, ticket: Ticket) -> None:
        self._signing_in.pop(ticket, None)
        address = ticket.address
        self._pending -= 1
        self._pending_per_address[address] -= 1
        if self._pending_per_address[address] <= 0:
            del self._pending_per_address[address]

    def signed_in(self, profile_id: int | None = None) -> list[Ticket]:
        """The signed-in connections that have a FileSession (of one profile, if given)."""
        return [
            t
            for t in self._signed_in
            if t.session is not None and not t.ended and (profile_id is None or t.profile_id == profile_id)
        ]

    @property
    def pending(self) -> int:
        return self._pending

    def connections_from(self, address: str) -> int:
        return self._per_address[address]
