"""The README's configuration reference is `appliance config-reference`'s output,
which covers every key of appliance/config.py with its default and a description."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from appliance import config
from appliance.config_reference import entries, reference

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- config-reference:start -->\n", "<!-- config-reference:end -->"


def test_the_readme_holds_the_generated_reference():
    text = README.read_text()
    assert START in text and END in text, "README.md lost its config-reference markers"
    section = text.split(START, 1)[1].split(END, 1)[0]
    assert section == reference(), "README.md's config reference is stale: paste `appliance config-reference` there"


def test_every_key_is_listed_with_its_default_and_a_description():
    settings = config.Settings()
    expected = {
        (section.name, key.name)
        for section in dataclasses.fields(settings)
        if dataclasses.is_dataclass(getattr(settings, section.name))
        for key in dataclasses.fields(getattr(settings, section.name))
    }
    rows = {(section, key): (default, description) for section, key, default, description in entries()}
    assert set(rows) == expected
    undocumented = [f"[{s}] {k}" for (s, k), (_, description) in rows.items() if not description]
    assert undocumented == [], f"add a comment beside these keys in appliance/config.py: {undocumented}"
    assert rows[("ftp", "passive_ports")][0] == '"30000-30100"'
    assert rows[("server", "allow_signup")][0] == "false"
    assert rows[("uploads", "resumable_max_size")][0] == str(1 << 40)
    assert "`APPLIANCE_SMTP_HOST`" in reference()


def test_the_command_prints_it():
    result = subprocess.run(
        [sys.executable, "-m", "appliance", "config-reference"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == reference()
