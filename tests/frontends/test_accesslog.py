"""The access log masks the secrets a URL can carry, wherever they appear in the line."""

from appliance.frontends.http.accesslog import mask_secrets


def test_secrets_in_urls_are_masked():
    line = (
        '127.0.0.1 - - [23/Nov/2026:11:00:00 +0000] "GET /auth/MTI/cx3f-8a1b2c3d4e HTTP/1.1" 200 427 '
        '"https://files.example.com/auth/MTI/cx3f-8a1b2c3d4e" "Mozilla"'
    )
    assert "cx3f-8a1b2c3d4e" not in mask_secrets(line)
    assert mask_secrets(line).count("/auth/MTI/***") == 2  # the request line and the Referer
    assert mask_secrets("GET /api/portal/shared/AbC_12/download/?access=xyz") == (
        "GET /api/portal/shared/***/download/?access=***"
    )
    assert mask_secrets("GET /auth/register?uid=MTI&token=cx3f-8a1b") == "GET /auth/register?uid=MTI&token=***"
    assert mask_secrets("GET /auth/shared?token=abc") == "GET /auth/shared?token=***"


def test_ordinary_console_routes_are_kept():
    for path in ("/auth/login", "/auth/billing", "/auth/forgot-password", "/auth/shared", "/admin/profiles/12"):
        assert mask_secrets(f"GET {path} HTTP/1.1") == f"GET {path} HTTP/1.1"


def test_a_download_whose_client_hangs_up_at_once_is_logged(daemon):
    """urllib closes the connection as soon as it has the body: the line must be there anyway."""
    import time

    from ..api_client import signed_in
    from ..helpers import ADMIN_PASSWORD

    home = daemon.home("admin")
    home.mkdir(parents=True, exist_ok=True)
    (home / "logged.bin").write_bytes(b"x" * 300_000)
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    for _ in range(5):
        reply = api.get("files/download/?path=/logged.bin")
        assert reply.status == 200 and len(reply.raw) == 300_000
    deadline = time.monotonic() + 10
    while daemon.output().count('"GET /api/portal/files/download/?path=/logged.bin HTTP/1.1" 200') < 5:
        assert time.monotonic() < deadline, "a finished download has no access-log line"
        time.sleep(0.05)


def test_each_line_names_the_request_id_and_the_signed_in_user(daemon):
    import time

    from ..api_client import signed_in
    from ..helpers import ADMIN_PASSWORD

    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    mine = api.get("dashboard/information/", headers={"X-Request-Id": "job-42.a"})
    assert mine.status == 200 and mine.headers["x-request-id"] == "job-42.a"
    made = api.get("dashboard/information/", headers={"X-Request-Id": "bad id\tinjected"})
    rid = made.headers["x-request-id"]
    assert len(rid) == 16 and rid != "bad id\tinjected"
    deadline = time.monotonic() + 10
    while "rid=job-42.a user=acme/admin" not in daemon.output() or f"rid={rid} user=acme/admin" not in daemon.output():
        assert time.monotonic() < deadline, daemon.output()[-2000:]
        time.sleep(0.05)
    assert "injected" not in daemon.output()
