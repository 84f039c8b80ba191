"""The FTP front end: twisted.protocols.ftp over the core.

`ftp_factory(core)` is what the composition root listens with, `core` the four
things FTP uses of the core (FtpCore). The pieces:
login.py (the shared cred adapter over core.signin, its session as a CoreShell),
shell.py (a core FileSession behind the commands' file calls), protocol.py (the control
connection and its interpreter, FTPSession, which holds its parts: the data
connection set-up and the transfers (data.py), the file commands (commands.py) and
the listings (listing.py), each owning its state; signin.py signs in), transfer.py
(data connections and transfers with backpressure), errors.py (the one mapping
of core errors to FTP replies) and twisted_private.py (the one place that uses
Twisted's private names).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...config import Settings
from ...core.signin import SignIn
from ...core.tls import ReloadableTLS
from .login import ftp_portal
from .protocol import FTPFactory


@dataclass(frozen=True)
class FtpCore:
    """What the FTP front end uses of the core, handed in by the composition root."""

    settings: Settings  # [ftp] and its passive ports
    reactor: object  # the clock of timeouts, and what data connections listen and connect with
    signin: SignIn  # admission as a connection arrives, then every sign-in
    tls: ReloadableTLS  # AUTH TLS's certificate, reloaded on SIGHUP


def ftp_factory(core: FtpCore) -> FTPFactory:
    """The factory for every FTP listener, configured from [ftp]."""
    settings = core.settings
    masquerade = settings.ftp.masquerade_address.strip() or None  # an IPv4 address: config.load checks it
    return FTPFactory(
        ftp_portal(core),
        core.reactor,
        passive_ports=settings.passive_port_range(),
        idle_timeout=settings.ftp.idle_timeout,
        transfer_timeout=settings.ftp.transfer_timeout,
        masquerade=masquerade,
        admission=core.signin,  # bans, then connection limits
        tls=core.tls,
        require_tls=settings.ftp.require_tls,
        require_tls_session_reuse=settings.ftp.require_tls_session_reuse,
        login_grace=settings.ftp.login_grace_time,
    )
