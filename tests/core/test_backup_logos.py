"""`appliance backup` keeps the organisations' logos (they live in the data dir,
not in a source), and restore puts them back; nothing else under branding/. A backup
is read back and checked before it is kept."""

from __future__ import annotations

import io
import tarfile

import pytest

from appliance.core import backup as backup_module
from appliance.core.backup import backup, restore
from appliance.core.datadir import DataDir
from appliance.errors import ConfigError
from appliance.store import db

from ..helpers import seed_keys

LOGO = "3-" + "ab" * 16 + ".png"


def test_logos_go_into_the_backup_and_come_back(tmp_path):
    source = DataDir(seed_keys(tmp_path / "source"))
    source.prepare()
    db.connect(source.database).conn.close()
    (source.path / "branding").mkdir()
    (source.path / "branding" / LOGO).write_bytes(b"\x89PNG logo")
    (source.path / "branding" / f".{LOGO}.1234.tmp").write_bytes(b"half")  # an upload being written
    names = backup(source, tmp_path / "backup.tar.gz")
    assert f"branding/{LOGO}" in names and not any(n.endswith(".tmp") for n in names)
    target = DataDir(tmp_path / "target")
    restore(tmp_path / "backup.tar.gz", target)
    assert (target.path / "branding" / LOGO).read_bytes() == b"\x89PNG logo"
    assert [p.name for p in (target.path / "branding").iterdir()] == [LOGO]


@pytest.mark.parametrize("name", ["branding/../token.key", "branding/evil.html", f"other/{LOGO}", f"branding/x/{LOGO}"])
def test_nothing_else_under_branding_is_restored(tmp_path, name):
    source = DataDir(seed_keys(tmp_path / "source"))
    source.prepare()
    db.connect(source.database).conn.close()
    backup(source, tmp_path / "backup.tar.gz")
    with tarfile.open(tmp_path / "backup.tar.gz") as original:
        members = [(m, original.extractfile(m).read()) for m in original.getmembers()]
    with tarfile.open(tmp_path / "crafted.tar.gz", "w:gz") as crafted:
        for member, data in members:
            crafted.addfile(member, io.BytesIO(data))
        info = tarfile.TarInfo(name)
        info.size = 4
        crafted.addfile(info, io.BytesIO(b"evil"))
    with pytest.raises(ConfigError, match="not a backup"):
        restore(tmp_path / "crafted.tar.gz", DataDir(tmp_path / "target"))


def test_a_backup_that_does_not_read_back_whole_is_not_kept(tmp_path, monkeypatch):
    """The backup is read back and checked before it replaces the target: a key that
    changed between being written and being checked (or anything missing) fails it,
    and nothing is left at the target."""
    data_dir = DataDir(seed_keys(tmp_path / "data"))
    data_dir.prepare()
    db.connect(data_dir.database).conn.close()
    target = tmp_path / "out.tar.gz"
    real_verify = backup_module._verify

    def key_changed_meanwhile(archive_path, data_dir_, names):
        (data_dir.path / "tls" / "cert.pem").write_bytes(b"another certificate")
        return real_verify(archive_path, data_dir_, names)

    monkeypatch.setattr(backup_module, "_verify", key_changed_meanwhile)
    with pytest.raises(ConfigError, match="does not verify: tls/cert.pem changed"):
        backup_module.backup(data_dir, target)
    assert not target.exists() and not list(tmp_path.glob(".out.tar.gz*"))
