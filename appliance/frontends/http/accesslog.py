"""The HTTP access log (one line per request, to journald): the combined log
format with the secrets URLs can carry masked, in the request line and in the
Referer alike: share-link tokens, ?token= and ?access= values, and the token of a
password-reset link (/auth/{uid}/{token}); then the request's id (the X-Request-Id
header of the reply, the caller's own when it sent a sane one) and the signed-in
user as organisation/username ("-" when none)."""

from __future__ import annotations

import re

from twisted.web.http import combinedLogFormatter
from twisted.web.iweb import IAccessLogFormatter
from zope.interface import provider

_SECRETS_IN_URL = re.compile(
    r"(/api/portal/shared/)[^/?\s\"]+"
    r"|([?&](?:token|access)=)[^&\s\"]+"
    r"|(/auth/(?!shared\b|login\b|register\b|billing\b|forgot-password\b)[^/?\s\"]+/)[^/?\s\"]+"
)


def mask_secrets(text: str) -> str:
    return _SECRETS_IN_URL.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "***", text)


@provider(IAccessLogFormatter)
def access_log_line(timestamp, request) -> str:
    """The combined log format, with secrets masked, then `rid=ID user=ORG/NAME`."""
    line = mask_secrets(combinedLogFormatter(timestamp, request))
    rid = getattr(request, "request_id", "-")
    user = getattr(request, "signed_in", "-")
    return f"{line} rid={rid} user={user}"
