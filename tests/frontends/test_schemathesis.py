"""schemathesis against the live daemon: every operation of the OpenAPI document,
with generated path and query parameters and bodies (valid and invalid), as the
signed-in operator; no reply may be a server error.

Calls that would end the run's own session are left out (logging out, changing
the password); generated sources are always local and mailboxes always point at
the loopback address (which they refuse), so nothing leaves this machine; mail
goes to a closed local port. (schemathesis's pytest plugin does not run on
pytest 9, so this drives its engine, as its command line does.)"""

from __future__ import annotations

import os

import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD, free_port, make_daemon

EXCLUDED = (
    "PortalApi.logout.post",  # ends a session: the run's own, if it guessed its refresh token
    "PortalApi.change_password.post",  # ends every other session
)
CHECKS = ["not_a_server_error"]
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "10"))  # more for a deeper run by hand


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = make_daemon(tmp_path_factory.mktemp("schemathesis"), start=False)
    d.env.update({"APPLIANCE_SMTP_HOST": "127.0.0.1", "APPLIANCE_SMTP_PORT": str(free_port())})
    d.start()
    yield d
    d.stop()


def confined(context, case, kwargs) -> None:
    """before_call: keep generated data on this machine (local sources only, mailboxes at loopback)."""
    body = case.body if isinstance(case.body, dict) else None
    if body is None or case.method not in ("POST", "PATCH", "PUT"):
        return
    if "/sources/" in case.path:
        body["type"] = "local"
        if isinstance(body.get("config"), dict):
            body["config"] = {"path": body["config"].get("path", "")}
    if "/mailboxes/" in case.path and "host" in body or case.path == "/api/portal/mailboxes/":
        body["host"] = "127.0.0.1"


@pytest.fixture
def before_call_hook():
    schemathesis.hooks.GLOBAL_HOOK_DISPATCHER.register_hook_with_name(confined, "before_call")
    yield
    schemathesis.hooks.GLOBAL_HOOK_DISPATCHER.unregister(confined)


def failures_of(event) -> list[str]:
    """What failed in one scenario, with the request that shows it."""
    found = []
    for checks in event.recorder.checks.values():
        for check in checks:
            if check.status == Status.FAILURE and check.failure_info is not None:
                found.append(f"{event.recorder.label}: {check.failure_info.failure.title}\n"
                             f"{check.failure_info.code_sample}")  # fmt: skip
    return found


def tracebacks(output: str, last: int = 5) -> str:
    """The daemon's last unexpected errors, without the access log around them."""
    found = []
    for line in output.splitlines():
        if "unexpected error answering" in line:
            found.append([line])
        elif found and line.startswith(("\t", " ")):
            found[-1].append(line)
    return "\n\n".join("\n".join(lines) for lines in found[-last:])


# hypothesis warns when a generated case (a long text, a big upload) makes a long repr;
# as an error (pyproject's filterwarnings) schemathesis would report it as the operation's failure
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
def test_no_operation_answers_a_server_error(daemon, before_call_hook):
    token = signed_in(daemon, "admin", ADMIN_PASSWORD).token
    schema = schemathesis.openapi.from_url(f"http://127.0.0.1:{daemon.http_port}/api/portal/openapi.json")
    schema = schema.exclude(operation_id=list(EXCLUDED))
    schema.config.update(headers={"Authorization": f"Bearer {token}"}, workers=1, request_timeout=30)
    schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])
    schema.config.checks.update(included_check_names=CHECKS)
    schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True, database="none")
    schema.config.cache.enabled = False  # no .schemathesis/ folder in the work tree
    failures, errors, scenarios = [], [], 0
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            scenarios += 1
            failures += failures_of(event)
        elif isinstance(event, (events.NonFatalError, events.FatalError)):
            errors.append(f"{getattr(event, 'label', '')}: {event.info.format() if hasattr(event, 'info') else event}")
    assert scenarios > 50
    assert not errors, "\n\n".join(errors)
    assert not failures, "\n\n".join(failures) + "\n\nthe daemon's tracebacks:\n" + tracebacks(daemon.output())
