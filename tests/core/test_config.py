"""Settings: TOML, environment overrides, and errors naming the key."""

from __future__ import annotations

import pytest

from appliance import config
from appliance.errors import ConfigError


def write(tmp_path, text: str):
    path = tmp_path / "appliance.toml"
    path.write_text(text)
    return path


def test_embedded_defaults():
    settings = config.load(None, {})
    assert settings.server.data_dir == "var"
    assert settings.listen.http == ["tcp:8000:interface=127.0.0.1"]
    assert settings.listen.sftp == ["tcp:2222"]
    assert settings.listen.ftp == ["tcp:2121"]
    assert settings.passive_port_range() == range(30000, 30101)


def test_file_then_environment(tmp_path):
    path = write(
        tmp_path,
        '[server]\ndata_dir = "/srv/app"\ntrial_days = 30\n[listen]\nsftp = ["tcp:22", "tcp6:22"]\n'
        '[sources]\nlocal_roots = ["/srv/shared"]\n',
    )
    settings = config.load(
        path,
        {
            "APPLIANCE_SERVER_TRIAL_DAYS": "7",
            "APPLIANCE_SMTP_STARTTLS": "yes",
            "APPLIANCE_LISTEN_FTP": "tcp:21,tcp6:21",
            "APPLIANCE_SMTP_HOST": "mail.example.com",
            "UNRELATED": "x",
        },
    )
    assert settings.server.data_dir == "/srv/app"
    assert settings.server.trial_days == 7
    assert settings.listen.sftp == ["tcp:22", "tcp6:22"]
    assert settings.listen.ftp == ["tcp:21", "tcp6:21"]
    assert settings.smtp.starttls is True
    assert settings.smtp.host == "mail.example.com"
    assert settings.sources.local_roots == ["/srv/shared"]


@pytest.mark.parametrize(
    "text,env,message",
    [
        ("[server]\nnope = 1\n", {}, r"\[server\] nope: unknown key"),
        ("[serverz]\n", {}, r"unknown section \[serverz\]"),
        ("[server]\ntrial_days = 'ten'\n", {}, r"\[server\] trial_days: expected a whole number"),
        ("[server]\nallow_signup = 1\n", {}, r"allow_signup: expected true or false"),
        ("[listen]\nhttp = [1]\n", {}, r"http: expected a list of strings"),
        ("not toml at all = = =", {}, "not valid TOML"),
        ("", {"APPLIANCE_SERVER_NOPE": "1"}, "APPLIANCE_SERVER_NOPE: no such setting"),
        ("", {"APPLIANCE_SERVER_TRIAL_DAYS": "x"}, "APPLIANCE_SERVER_TRIAL_DAYS: expected a whole number"),
        ("[ftp]\npassive_ports = '100-200'\n", {}, "passive_ports"),
        ("[ftp]\npassive_ports = '40000-30000'\n", {}, "passive_ports"),
        ("[sources]\nlocal_roots = ['relative/path']\n", {}, "not an absolute path"),
    ],
)
def test_errors_name_the_key_and_the_file(tmp_path, text, env, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as caught:
        config.load(path, env)
    if not env:
        assert str(path) in str(caught.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        config.load(tmp_path / "absent.toml", {})


def test_retired_keys_are_read_from_file_and_environment_and_named(tmp_path):
    path = write(tmp_path, "[server]\nidle_spin_us = 200\ntrial_days = 7\n")
    settings = config.load(path, {"APPLIANCE_SERVER_THREAD_WAIT_US": "500"})
    assert settings.server.trial_days == 7  # the rest of the file is read
    assert not hasattr(settings.server, "idle_spin_us")
    lines = settings.retired_in_use()
    assert lines[0].startswith(f"{path}: [server] idle_spin_us is retired and does nothing: ")
    assert lines[1].startswith(
        "environment variable APPLIANCE_SERVER_THREAD_WAIT_US: [server] thread_wait_us is retired"
    )
    assert config.load(None, {}).retired_in_use() == []
