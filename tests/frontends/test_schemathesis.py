"""schemathesis against the live daemon: every operation of the OpenAPI document, with
generated path and query parameters and bodies (valid and invalid: wrong types, huge
numbers, nesting, long texts), once as an organisation's admin and once as the
operator (so the god/ endpoints run too); no reply may be a server error, every reply
must be as the document declares it (a documented status and media type, a body that
matches its schema: replies.py) and every request that breaks the document's schema
must be refused.

Every operation runs, the destructive ones included; what would end the run's own
meaning is steered, not left out (see `arranged`): both principals sign in before any
run (the generated sign-ins get 127.0.0.1 banned, which refuses sign-ins, not
sessions); a change aimed at the caller's own profile goes to a spare profile of its
organisation, the operator's status or trial change of its own organisation to a spare
organisation, and requiring TLS of the own organisation is turned off (the run speaks
plain HTTP); logging out goes without the run's Authorization header. The admin's run
comes first: the operator's may delete the admin's organisation. Each run ends by
checking its session still works. Generated sources are always local and mailboxes
always point at the loopback address (which they refuse), so nothing leaves this
machine; mail goes to a closed local port. (schemathesis's pytest plugin does not run
on pytest 9, so this drives its engine, as its command line does.)"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD, free_port

# no server error; every reply as the document declares it (a documented status, its media type, its
# body's schema: replies.py); every request the document's schemas refuse refused
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
]
# a few tens of examples per operation find wrong types, huge numbers and nesting; more for a deeper run by hand
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25"))
PASSWORD = "user-password-1"  # helpers.add_profile's


@dataclass
class Caller:
    """One signed-in principal of a run, and where its own changes are steered to."""

    api: Api
    profile_id: int
    org_id: int
    spare_profile_id: int
    spare_org_id: int


@pytest.fixture(scope="module")
def callers(daemon) -> dict[str, Caller]:
    """The operator (admin of Acme) and the admin of a second organisation, both signed in now."""
    operator_org = daemon.default_org()
    other_org = daemon.add_organisation("Beta")
    spare_org = daemon.add_organisation("Spare")
    admin_id = daemon.add_profile("beta-admin", org_id=other_org, is_admin=True)
    operator_id = daemon.query("SELECT id FROM profiles WHERE username = 'admin'")[0]["id"]
    return {
        "admin": Caller(signed_in(daemon, "beta-admin", PASSWORD), admin_id, other_org,
                        daemon.add_profile("beta-spare", org_id=other_org), spare_org),
        "operator": Caller(signed_in(daemon, "admin", ADMIN_PASSWORD), operator_id, operator_org,
                           daemon.add_profile("acme-spare", org_id=operator_org), spare_org),
    }  # fmt: skip


def confined(case) -> None:
    """Keep generated data on this machine (local sources only, mailboxes at loopback)."""
    body = case.body if isinstance(case.body, dict) else None
    if body is None or case.method not in ("POST", "PATCH", "PUT"):
        return
    if "/sources/" in case.path:
        body["type"] = "local"
        if isinstance(body.get("config"), dict):
            body["config"] = {"path": body["config"].get("path", "")}
    if "/mailboxes/" in case.path and "host" in body or case.path == "/api/portal/mailboxes/":
        body["host"] = "127.0.0.1"


def names(value, row_id: int) -> bool:
    """Whether a generated path parameter reaches this row (routes read "01" and other digits as numbers too)."""
    try:
        return int(str(value)) == row_id
    except ValueError:
        return False


def arranged(caller: Caller):
    """before_call: the caller's session on every call, its own principals spared (see above)."""

    def hook(context, case, kwargs) -> None:
        confined(case)
        headers = dict(case.headers or {})
        headers.pop("Authorization", None)
        if case.path != "/api/portal/token/logout/":
            headers["Authorization"] = f"Bearer {caller.api.token}"
        case.headers = headers
        params = case.path_parameters or {}
        if case.method in ("PATCH", "PUT") and names(params.get("profile_id"), caller.profile_id):
            params["profile_id"] = caller.spare_profile_id
        if case.path == "/api/portal/god/organisations/{org_id}/" and names(params.get("org_id"), caller.org_id):
            params["org_id"] = caller.spare_org_id
        if case.path == "/api/portal/organisation/{org_id}/" and isinstance(case.body, dict):
            if case.body.get("require_tls") is True:
                case.body["require_tls"] = False

    return hook


@pytest.fixture
def hooks():
    """Registers a run's hooks with schemathesis, and takes them away after the test."""
    registered = []

    def register(hook, name: str) -> None:
        schemathesis.hooks.GLOBAL_HOOK_DISPATCHER.register_hook_with_name(hook, name)
        registered.append(hook)

    yield register
    for hook in registered:
        schemathesis.hooks.GLOBAL_HOOK_DISPATCHER.unregister(hook)


def failures_of(event) -> list[str]:
    """What failed in one scenario, with the request that shows it."""
    found = []
    for checks in event.recorder.checks.values():
        for check in checks:
            if check.status == Status.FAILURE and check.failure_info is not None:
                failure = check.failure_info.failure
                found.append(f"{event.recorder.label}: {failure.title}\n{failure.message[:2000]}\n"
                             f"{check.failure_info.code_sample[:2000]}")  # fmt: skip
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


def run(daemon, caller: Caller, register) -> Counter:
    """One schemathesis run as `caller`: (operation label, status) -> calls. Fails on any server error."""
    answered: Counter = Counter()

    def count(context, case, response) -> None:
        answered[(f"{case.method} {case.path}", response.status_code)] += 1

    register(arranged(caller), "before_call")
    register(count, "after_call")
    schema = schemathesis.openapi.from_url(f"http://127.0.0.1:{daemon.http_port}/api/portal/openapi.json")
    schema.config.update(workers=1, request_timeout=30)
    schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])
    schema.config.checks.update(included_check_names=CHECKS)
    rejected = schema.config.checks.negative_data_rejection
    rejected.expected_statuses = [*rejected.expected_statuses, "413"]  # a body too large is refused unread
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
    assert caller.api.get("dashboard/information/").status == 200  # the run kept its session throughout
    documented = {f"{method.upper()} {path}" for path, methods in schema.raw_schema["paths"].items()
                  for method in methods}  # fmt: skip
    assert documented <= {label for label, _ in answered}  # every operation ran
    return answered


pytestmark = [
    # hypothesis warns when a generated case (a long text, a big upload) makes a long repr;
    # as an error (pyproject's filterwarnings) schemathesis would report it as the operation's failure
    pytest.mark.filterwarnings("ignore:Generating overly large repr"),
    pytest.mark.daemon_with(smtp__host="127.0.0.1", smtp__port=free_port()),  # mail fails at once
]


def test_no_operation_answers_a_server_error_to_an_organisation_admin(daemon, callers, hooks):
    answered = run(daemon, callers["admin"], hooks)
    god = {status for (label, status) in answered if label.split()[1].startswith("/api/portal/god/")}
    assert 403 in god and min(god) >= 400  # the god/ endpoints refuse an admin
    assert sum(n for (_, status), n in answered.items() if status < 300) > 100


def test_no_operation_answers_a_server_error_to_the_operator(daemon, callers, hooks):
    answered = run(daemon, callers["operator"], hooks)
    # it ran as the operator: the god/ endpoints answered (an organisation is created only
    # by the one valid example, whose first admin's name an earlier case may have taken)
    god = {status for (label, status) in answered if label.split()[1].startswith("/api/portal/god/")}
    assert min(god) < 300, god
    assert sum(n for (_, status), n in answered.items() if status < 300) > 100
