"""Connection limits shared by every protocol, and the live session counts.

A front end asks `open(address, protocol)` when a connection arrives and gets a
Ticket (or a refusal with a message to send before hanging up); it calls
`ticket.authenticated()` after sign-in and `ticket.close()` when the connection
ends. Limits: connections per address, and connections still signing in, in
total and per address (like OpenSSH's MaxStartups), so a flood of half-open
handshakes cannot starve real users.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..errors import PermissionDenied


@dataclass
class ConnectionSettings:
    per_address: int = 50
    unauthenticated: int = 100
    unauthenticated_per_address: int = 10


class Ticket:
    def __init__(self, limits: ConnectionLimits, address: str, protocol: str):
        self._limits = limits
        self.address = address
        self.protocol = protocol
        self.signed_in = False
        self.closed = False

    def authenticated(self) -> None:
        if not self.signed_in and not self.closed:
            self.signed_in = True
            self._limits._authenticated(self)

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
        self.sessions: Counter[str] = Counter()  # signed-in sessions per protocol, for metrics

    def open(self, address: str, protocol: str) -> Ticket:
        """Admit a new connection or raise PermissionDenied with the reason."""
        limits = self.settings
        if self._per_address[address] >= limits.per_address:
            raise PermissionDenied(f"Too many connections from {address} (at most {limits.per_address}).")
        if self._pending >= limits.unauthenticated:
            raise PermissionDenied("Too many connections are signing in right now; try again shortly.")
        if self._pending_per_address[address] >= limits.unauthenticated_per_address:
            raise PermissionDenied(f"Too many connections from {address} are signing in at once.")
        self._per_address[address] += 1
        self._pending_per_address[address] += 1
        self._pending += 1
        return Ticket(self, address, protocol)

    def _authenticated(self, ticket: Ticket) -> None:
        self._unpend(ticket.address)
        self.sessions[ticket.protocol] += 1

    def _closed(self, ticket: Ticket) -> None:
        if ticket.signed_in:
            self.sessions[ticket.protocol] -= 1
        else:
            self._unpend(ticket.address)
        self._per_address[ticket.address] -= 1
        if self._per_address[ticket.address] <= 0:
            del self._per_address[ticket.address]

    def _unpend(self, address: str) -> None:
        self._pending -= 1
        self._pending_per_address[address] -= 1
        if self._pending_per_address[address] <= 0:
            del self._pending_per_address[address]

    @property
    def pending(self) -> int:
        return self._pending

    def connections_from(self, address: str) -> int:
        return self._per_address[address]
