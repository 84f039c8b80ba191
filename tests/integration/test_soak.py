"""A short soak (bench/soak.py): 20 OpenSSH sftp sessions, 10 ftplib sessions and
API traffic at once for about 20 s against one daemon; every transfer is read back
and compared. Nothing may fail or come back different (no timing assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SOAK = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


def test_a_short_soak_loses_and_corrupts_nothing(tmp_path):
    figures_file = tmp_path / "soak.json"
    argv = [sys.executable, str(SOAK), "--duration", "20", "--sftp", "20", "--ftp", "10", "--http", "2",
            "--json", str(figures_file)]  # fmt: skip
    run = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert figures_file.exists(), run.stdout + run.stderr
    figures = json.loads(figures_file.read_text())
    assert run.returncode == 0, (figures["errors"], run.stderr[-2000:])
    for protocol in ("sftp", "ftp", "http"):
        assert figures[f"{protocol}_failed"] == 0, figures["errors"]
        assert figures[f"{protocol}_corrupt"] == 0, figures["errors"]
        assert figures[f"{protocol}_ok"] > 0, protocol
    assert figures["daemon_alive_at_end"] is True
    assert figures["peak_rss_kib"] > 0
