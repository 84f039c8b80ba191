"""Coroutines and the Deferreds of Twisted's interfaces: `as_deferred` where an interface
demands a Deferred (ISFTPServer, IFTPShell, IRealm, ...), `spawn` for fire-and-forget work
whose failure is logged, never swallowed. Every layer uses these; none of them needs the
thread pools (threads.py) for it."""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.logger import Logger

T = TypeVar("T")

log = Logger()


def as_deferred(coro: Coroutine[Any, Any, T]) -> Deferred[T]:
    """Adapt a coroutine to the Deferred a Twisted interface demands."""
    return Deferred.fromCoroutine(coro)


def spawn(awaitable: Awaitable[Any] | Deferred, what: str) -> Deferred:
    """Fire-and-forget: run it, and log its failure instead of swallowing it."""
    d = awaitable if isinstance(awaitable, Deferred) else Deferred.fromCoroutine(awaitable)
    d.addErrback(lambda f: log.failure("background task failed: {what}", f, what=what))
    return d
