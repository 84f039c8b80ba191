"""Backups of a data dir: a consistent online copy of the database (SQLite's
backup API, safe while the daemon serves) with the keys and the organisations'
logos, as one private tar.gz; and restoring one into a data dir no daemon is using."""

from __future__ import annotations

import errno
import io
import os
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

from ..errors import ConfigError
from ..store import db
from ..store.db import SCHEMA_VERSION
from .branding import LOGO_FILE
from .datadir import HOST_KEY_TYPES, DataDir

# what a restore needs to be the same appliance, besides the database: the token-signing
# and sealing keys, the SSH host keys and the TLS pair in the data dir (clients see the
# same host keys and certificate)
SECRET_FILES = (
    ["token.key", "secrets.key"]
    + [f"ssh/ssh_host_{kind}_key" for kind in HOST_KEY_TYPES]
    + ["tls/cert.pem", "tls/key.pem"]
)
DATABASE = "appliance.db"


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    info.mtime = int(time.time())
    archive.addfile(info, io.BytesIO(data))


def backup(data_dir: DataDir, target: Path) -> list[str]:
    """Write the backup to `target` (mode 0600); return the names it holds."""
    if not data_dir.database.exists():
        raise ConfigError(f"data dir {data_dir.path}: no database to back up")
    target = Path(target)
    with tempfile.TemporaryDirectory(dir=data_dir.path) as scratch:
        copy = Path(scratch) / DATABASE
        db.copy_online(data_dir.database, copy)
        # a new private file beside the target, renamed over it once complete: an existing
        # file keeps neither its mode (0644 would show the keys) nor half of its old content
        partial = target.with_name(f".{target.name}.partial")
        try:
            if target.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            partial.unlink(missing_ok=True)
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                with tarfile.open(fileobj=out, mode="w:gz") as archive:
                    _add_bytes(archive, DATABASE, copy.read_bytes())
                    for name in SECRET_FILES:
                        path = data_dir.path / name
                        if path.exists():
                            _add_bytes(archive, name, path.read_bytes())
                    for name in _logos(data_dir):
                        _add_bytes(archive, name, (data_dir.path / name).read_bytes())
                out.flush()
                os.fsync(out.fileno())
            names = [DATABASE] + [n for n in SECRET_FILES if (data_dir.path / n).exists()] + _logos(data_dir)
            _verify(partial, data_dir, names)
            os.replace(partial, target)
        except OSError as e:
            partial.unlink(missing_ok=True)
            raise ConfigError(f"{target}: cannot write the backup: {e.strerror}") from None
        except ConfigError:
            partial.unlink(missing_ok=True)
            raise
    return names


def _verify(archive_path: Path, data_dir: DataDir, names: list[str]) -> None:
    """Read the written backup back whole, as a restore will: every name there, the keys
    and logos as in the data dir, the database whole (PRAGMA integrity_check)."""
    problem = None
    try:
        with tarfile.open(archive_path, mode="r:gz") as archive:
            contents = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}
    except (OSError, EOFError, zlib.error, tarfile.TarError) as e:
        raise ConfigError(f"{archive_path}: the backup written cannot be read back ({e}); nothing was kept") from None
    missing = [name for name in names if name not in contents]
    if missing:
        problem = f"{', '.join(missing)} missing"
    else:
        changed = [n for n in names if n != DATABASE and contents[n] != (data_dir.path / n).read_bytes()]
        if changed:
            problem = f"{', '.join(changed)} changed while it was written; try again"
    if problem is None:
        with tempfile.TemporaryDirectory(dir=archive_path.parent) as scratch:
            copy = Path(scratch) / DATABASE
            copy.write_bytes(contents[DATABASE])
            check, _version = db.integrity(copy)
            if check != "ok":
                problem = f"its database fails its integrity check ({check})"
    if problem is not None:
        raise ConfigError(f"{archive_path}: the backup does not verify: {problem}; nothing was kept")


def _logos(data_dir: DataDir) -> list[str]:
    folder = data_dir.path / "branding"
    names = sorted(p.name for p in folder.iterdir() if LOGO_FILE.match(p.name)) if folder.is_dir() else []
    return [f"branding/{name}" for name in names]


def restore(archive_path: Path, data_dir: DataDir, force: bool = False) -> None:
    """Put a backup's database and keys into `data_dir` (files of sources are not in it)."""
    if data_dir.in_use():
        raise ConfigError(f"data dir {data_dir.path}: a daemon is serving it; stop it before restoring")
    if data_dir.database.exists() and not force:
        raise ConfigError(f"data dir {data_dir.path}: already has a database; add --force to replace it")
    try:
        archive = tarfile.open(archive_path, mode="r:gz")
    except (OSError, tarfile.TarError) as e:
        raise ConfigError(f"{archive_path}: not a backup made by `appliance backup` ({e})") from None
    allowed = set(SECRET_FILES) | {DATABASE}
    with archive:
        try:
            members = {m.name: m for m in archive.getmembers()}
            unknown = [name for name in members if name not in allowed and not _is_logo(name)]
            if unknown or DATABASE not in members or not all(m.isfile() for m in members.values()):
                raise ConfigError(f"{archive_path}: not a backup made by `appliance backup`")
            contents = {name: archive.extractfile(member).read() for name, member in members.items()}
        except (OSError, EOFError, zlib.error, tarfile.TarError) as e:  # cut short (a full disk, a copy stopped)
            raise ConfigError(f"{archive_path}: damaged or cut short, nothing was restored ({e})") from None
    data_dir.path.mkdir(mode=0o750, parents=True, exist_ok=True)
    (data_dir.path / "ssh").mkdir(mode=0o700, exist_ok=True)
    (data_dir.path / "tls").mkdir(mode=0o700, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=data_dir.path) as scratch:
        candidate = Path(scratch) / DATABASE
        candidate.write_bytes(contents[DATABASE])
        check, version = db.integrity(candidate)
        if version is None:
            raise ConfigError(f"{archive_path}: the database in it is damaged ({check})")
        if check != "ok":
            raise ConfigError(f"{archive_path}: the database in it fails its integrity check: {check}")
        if version > SCHEMA_VERSION:
            raise ConfigError(f"{archive_path}: made by a newer release (schema {version}); install that release")
        for name in SECRET_FILES:
            if name in contents:
                _replace(data_dir.path / name, contents[name])
        for name in filter(_is_logo, contents):
            (data_dir.path / "branding").mkdir(mode=0o750, exist_ok=True)
            _replace(data_dir.path / name, contents[name])
        for suffix in ("-wal", "-shm"):
            Path(str(data_dir.database) + suffix).unlink(missing_ok=True)
        os.chmod(candidate, 0o600)
        os.replace(candidate, data_dir.database)
    data_dir.files.mkdir(mode=0o750, exist_ok=True)


def _is_logo(name: str) -> bool:
    folder, _, file = name.partition("/")
    return folder == "branding" and LOGO_FILE.match(file) is not None


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".restore")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
