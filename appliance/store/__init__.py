"""The SQLite store: the schema, its migrations and every query."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils
from twisted.logger import Logger

from ..errors import Unavailable
from ..threads import Threads
from . import db as _db

T = TypeVar("T")
log = Logger()


DISK_FULL = "The appliance's data disk is full, so nothing can be recorded; try again later."


class Store:
    """The database, reached only through `run` on the database thread."""

    def __init__(self, path: str | Path, threads: Threads):
        self.path = Path(path)
        self._threads = threads
        self._db: sqlite_utils.Database | None = None

    def open(self) -> None:
        """Open and migrate (synchronously: done once at start-up, before serving)."""
        self._db = _db.connect(self.path)

    def close(self) -> None:
        if self._db is not None:
            self._db.conn.close()
            self._db = None

    def read_at_start(self, query: Callable[..., T], *args: Any) -> T:
        """Run a query on the calling thread: at start-up only, between `open` and serving,
        when nothing else uses the database (what the core must know before it answers)."""
        assert self._db is not None, "store not opened"
        return query(self._db, *args)

    async def run(self, query: Callable[..., T], *args: Any) -> T:
        """Run a query function from store.queries on the database thread."""
        assert self._db is not None, "store not opened"
        try:
            return await self._threads.db(query, self._db, *args)
        except sqlite3.OperationalError as e:
            if getattr(e, "sqlite_errorcode", None) != sqlite3.SQLITE_FULL:  # "database or disk is full"
                raise
            log.error("the data disk is full: the database cannot commit ({error})", error=str(e))
            raise Unavailable(DISK_FULL) from None
