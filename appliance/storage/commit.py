"""The close of an upload that several handles of one session may hold open, written
once for every backend (local/handles.Writer, remote_io.RemoteUpload)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..errors import ApplianceError, ClientGone
from .interface import Budget


class Owner(Protocol):
    """Who holds a session's uploads in progress (core/files/own.py OwnUploads): told
    when a commit begins, so that a STAT or OPEN right behind it waits for it."""

    def finishing(self, upload) -> Callable[[], None]: ...


def last_look(still_wanted: Callable[[], bool] | None) -> None:
    """An upload's commit, once its bytes are durable and before its name appears: raise
    ClientGone when its caller says it is no longer wanted (see SharedCommit.commit)."""
    if still_wanted is not None and not still_wanted():
        raise ClientGone()


class SharedCommit:
    """The close of an upload a session may hold open in several handles, written once
    for every storage (handles.Writer, remote_io.RemoteUpload): the last handle's close
    commits through the storage's own `_commit_now`; an orphaned upload is dropped."""

    _aborted: Exception | None
    _done: bool
    _error: Exception | None
    _limits: Budget
    handles: int
    orphaned: bool
    owner: Owner | None
    replaced: int | None
    size: int

    def _grow_to(self, end: int) -> None:
        """Count bytes up to `end` against the quota (a refusal fails the upload)."""
        if end > self.size:
            try:
                self._limits.grow(end - self.size, self.replaced or 0)
            except ApplianceError as e:
                self._error = e
                raise
            self.size = end

    async def commit(self, still_wanted: Callable[[], bool] | None = None) -> None:
        """Make the upload visible under its name and record it (the last handle's close
        does; an orphaned upload is dropped quietly). `still_wanted`: asked once the
        bytes are durable, right before the name appears (on the thread that does that,
        so it must be thread-safe); False drops the upload (raises ClientGone)."""
        if self._aborted is not None:
            raise self._aborted  # dropped meanwhile (shutdown, session ended): saying "saved" would lie
        if self._done:
            return
        if self.handles > 1:  # another handle of the session still has it open
            self.handles -= 1
            if self._error is not None:
                raise self._error
            return
        if self.orphaned:
            await self.abort()
            return
        finished = self.owner.finishing(self) if self.owner is not None else None
        try:
            await self._commit_now(still_wanted)
        finally:
            if finished is not None:
                finished()
