"""Sign-in for FTP: the shared cred adapter (frontends/credentials.py) over
core.signin, its live session wrapped in a CoreShell."""

from __future__ import annotations

from twisted.cred.portal import Portal

from ..credentials import core_portal
from .shell import CoreShell, IFilesShell


def _shell(live):
    shell = CoreShell(live.files)
    return shell, shell.logout


def ftp_portal(core) -> Portal:
    return core_portal(core.signin, "ftp", IFilesShell, _shell)
