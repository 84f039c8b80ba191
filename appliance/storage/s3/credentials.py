"""S3 sources that sign in with OpenID Connect instead of access keys (MinIO with an
OpenID provider, AWS with an IAM OIDC identity provider): the admin signs in once
in the browser (OAuth2 authorization code with PKCE, see source_admin.py); the
source keeps the provider's refresh token, sealed; at connection time

    refresh token -> the provider's token endpoint (grant_type=refresh_token)
    -> id_token (or access_token) -> STS AssumeRoleWithWebIdentity -> temporary keys

and the keys are kept until 20 minutes before they expire (botocore's own
RefreshableCredentials asks for new ones 15 minutes before). A refresh token the
provider rotates is stored again; one it refuses puts the source in error until an
admin signs in again.

Requests to the provider are plain form POSTs (urllib) on the network pool with a
timeout, the client authenticated with HTTP Basic (client_secret_basic, RFC 6749
2.3.1), or only by its client_id in the form for a public client (no secret: PKCE
alone). Every connection, to the provider and to STS, goes to an address netcheck
checked for it (netcheck.http_handlers, netcheck.pin_botocore), like the S3 endpoint's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from typing import Protocol

from twisted.logger import Logger

from ... import netcheck
from ...deferreds import spawn
from ...errors import Invalid, Unavailable
from ...models import to_iso

log = Logger()

TIMEOUT = 15  # seconds for a request to the provider
KEEP_MARGIN = 20 * 60  # temporary keys are used until this many seconds before they expire
DURATION = 3600  # seconds of temporary keys asked from STS
REFUSED = "The provider refused the saved sign-in: sign in again."
NOT_SIGNED_IN = "Sign in with the provider to finish connecting this source."


# -- PKCE and state (RFC 7636) ----------------------------------------------------------------


def new_state() -> str:
    return secrets.token_urlsafe(32)


def new_verifier() -> str:
    """A code_verifier: 64 characters of the unreserved set (RFC 7636 4.1 asks 43 to 128)."""
    return secrets.token_urlsafe(48)


def challenge(verifier: str) -> str:
    """The S256 code_challenge of a verifier."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def state_hash(state: str) -> str:
    """How a state is kept in the database (the state itself is a bearer value in a URL)."""
    return hashlib.sha256(state.encode("utf-8", "surrogateescape")).hexdigest()


def authorize_url(base: str, client_id: str, redirect_uri: str, scope: str, state: str, verifier: str) -> str:
    query = urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": scope,
            "state": state,
            "code_challenge": challenge(verifier),
            "code_challenge_method": "S256",
        }
    )
    return base + ("&" if urllib.parse.urlsplit(base).query else "?") + query


# -- the provider's token endpoint --------------------------------------------------------------


class ProviderError(Invalid):
    """The provider answered the token request with an OAuth2 error (`code`: its `error`)."""

    def __init__(self, message: str, code: str):
        super().__init__(message, {"oauth": [message]})
        self.code = code


def check_host(url: str, destinations: netcheck.Destinations, allow_loopback: bool) -> None:
    """netcheck on the URL's host (blocking: DNS), to refuse a settings form early."""
    parts = urllib.parse.urlsplit(url)
    destinations.allowed(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80),
                         allow_loopback)  # fmt: skip


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # a token endpoint answers, it does not send the secret elsewhere


def token_request(url: str, form: dict, client_id: str, client_secret: str,
                  destinations: netcheck.Destinations, allow_loopback: bool) -> dict:  # fmt: skip
    """POST `form` to the token endpoint (blocking: call on the network pool); the JSON reply,
    or ProviderError with the provider's error, or Unavailable when it cannot be reached
    (Invalid when the host's address is refused: checked for the connection itself)."""
    form = dict(form)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    if client_secret:
        pair = f"{urllib.parse.quote(client_id, safe='')}:{urllib.parse.quote(client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    else:
        form["client_id"] = client_id
    request = urllib.request.Request(url, urllib.parse.urlencode(form).encode(), headers, method="POST")
    opener = urllib.request.build_opener(_NoRedirect, *netcheck.http_handlers(destinations, allow_loopback))
    host = urllib.parse.urlsplit(url).netloc
    try:
        with opener.open(request, timeout=TIMEOUT) as response:
            status, body = response.status, response.read(1 << 20)
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read(1 << 20)
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise Unavailable(f"Cannot reach the provider's token endpoint at {host}: {reason}.") from None
    try:
        reply = json.loads(body)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        raise Unavailable(f"The provider's token endpoint at {host} answered HTTP {status} without a JSON reply.")
    if status != 200 or "error" in reply:
        raise provider_error(str(reply.get("error") or f"HTTP {status}"), str(reply.get("error_description") or ""))
    return reply


def provider_error(code: str, description: str, refreshing: bool = False) -> ProviderError:
    """An OAuth2 error code as words a person can act on."""
    said = f" (it said: {description[:300]})" if description else ""
    if code == "invalid_grant":
        message = REFUSED if refreshing else "The sign-in expired or was used already: try again."
    elif code == "invalid_client":
        message = (
            "The provider refused this appliance's client id or secret (invalid_client): check config.oauth.client_id "
            f"and config.oauth.client_secret{said}."
        )
    elif code == "unauthorized_client":
        message = (
            "The provider does not let this client use this kind of sign-in (unauthorized_client): allow the "
            f"authorization code and refresh token grants for the client at the provider{said}."
        )
    elif code == "access_denied":
        message = f"The sign-in was declined at the provider (access_denied){said}: nothing changed."
    elif code == "invalid_scope":
        message = f"The provider refused the scope (invalid_scope): check config.oauth.scope{said}."
    else:
        message = f"The provider refused the sign-in ({code[:100]}){said}."
    return ProviderError(message, code)


# -- STS --------------------------------------------------------------------------------------


def assume_role(endpoint: str, region: str, role_arn: str, session_name: str, token: str, verify_tls: bool,
                destinations: netcheck.Destinations, allow_loopback: bool) -> dict:  # fmt: skip
    """Temporary keys for a web identity token (blocking: call on the network pool).
    AssumeRoleWithWebIdentity is an unsigned call; without a role ARN (MinIO's claim-based
    policies) none is sent."""
    import botocore.config
    import botocore.session
    from botocore import UNSIGNED
    from botocore import exceptions as bx

    config = botocore.config.Config(
        region_name=region,
        signature_version=UNSIGNED,
        parameter_validation=False,  # RoleArn may be left out
        connect_timeout=10,
        read_timeout=30,
        retries={"max_attempts": 2, "mode": "standard"},
        user_agent_appid="appliance",
    )
    client = botocore.session.Session().create_client("sts", endpoint_url=endpoint, verify=verify_tls, config=config)
    netcheck.pin_botocore(client, destinations, allow_loopback)
    kwargs = {"RoleSessionName": session_name, "WebIdentityToken": token, "DurationSeconds": DURATION}
    if role_arn:
        kwargs["RoleArn"] = role_arn
    try:
        return client.assume_role_with_web_identity(**kwargs)["Credentials"]
    except bx.ClientError as e:
        error = e.response.get("Error", {})
        code, message = str(error.get("Code", "")), str(error.get("Message", "") or "")[:300]
        raise Unavailable(
            f"The STS service at {endpoint} refused the provider's token ({code}: {message}): check that it trusts "
            "the provider (and config.oauth.role_arn)."
        ) from None
    except bx.BotoCoreError as e:
        refused = e.kwargs.get("error") if isinstance(e, bx.HTTPClientError) else None
        if isinstance(refused, Invalid | Unavailable):  # the address check of the connection
            raise Unavailable(f"The STS service at {endpoint} may not be reached: {refused.message}") from None
        raise Unavailable(f"The STS request to {endpoint} failed: {e}") from None
    finally:
        client.close()


# -- one source's signed-in identity ----------------------------------------------------------


class SignInNeeded(Unavailable):
    """The source has no usable sign-in: an admin must sign in with the provider."""

    field = "oauth"


class WebIdentity:
    """The temporary keys of one source's sign-in, fetched (blocking) when botocore asks."""

    def __init__(self, owner: WebIdentities, source_id: int, oauth: dict, sts_endpoint: str, region: str,
                 verify_tls: bool, refresh_token: str, client_secret: str, key: tuple):  # fmt: skip
        self._owner = owner
        self.source_id = source_id
        self.grant = oauth.get("grant", "")
        self._token_url = oauth.get("token_url", "")
        self._client_id = oauth.get("client_id", "")
        self._client_secret = client_secret
        self._role_arn = oauth.get("role_arn", "")
        self._sts_endpoint = sts_endpoint
        self._region = region
        self._verify_tls = verify_tls
        self._refresh_token = refresh_token
        self.key = key
        self._lock = threading.Lock()
        self._keys: dict | None = None
        self._expires = 0.0

    def fetch(self) -> dict:
        """botocore's credential metadata: access_key, secret_key, token, expiry_time (blocking)."""
        with self._lock:
            if self._keys is not None and self._expires - time.time() > KEEP_MARGIN:
                return self._keys
            if not self._refresh_token:
                raise SignInNeeded(NOT_SIGNED_IN)
            try:
                tokens = token_request(
                    self._token_url,
                    {"grant_type": "refresh_token", "refresh_token": self._refresh_token},
                    self._client_id,
                    self._client_secret,
                    self._owner.destinations,
                    self._owner.allow_loopback,
                )
            except ProviderError as e:
                if e.code == "invalid_grant":
                    self._refresh_token = ""
                    self._owner.refused(self)
                    raise SignInNeeded(REFUSED) from None
                raise Unavailable(e.message) from None
            rotated = tokens.get("refresh_token")
            if isinstance(rotated, str) and rotated and rotated != self._refresh_token:
                self._refresh_token = rotated
                self._owner.rotated(self, rotated)
            token = tokens.get("id_token") or tokens.get("access_token")
            if not isinstance(token, str) or not token:
                raise Unavailable("The provider's token endpoint gave neither an id_token nor an access_token.")
            found = assume_role(self._sts_endpoint, self._region, self._role_arn, f"appliance-source-{self.source_id}",
                                token, self._verify_tls, self._owner.destinations, self._owner.allow_loopback)  # fmt: skip
            expiration = found["Expiration"]
            if not isinstance(expiration, datetime):
                expiration = datetime.fromisoformat(str(expiration).replace("Z", "+00:00"))
            self._expires = expiration.timestamp()
            self._keys = {
                "access_key": found["AccessKeyId"],
                "secret_key": found["SecretAccessKey"],
                "token": found["SessionToken"],
                "expiry_time": expiration.astimezone(UTC).isoformat(),
            }
            return self._keys

    def forget(self) -> None:
        """Fetch new keys next time (from the saved sign-in), not the ones kept."""
        self._expires = 0.0  # no lock: called on the reactor, which must not wait for a fetch in progress

    def install(self, session) -> None:
        """Make a botocore session sign with these keys, refreshed as they near their expiry."""
        from botocore.credentials import CredentialProvider, CredentialResolver, DeferredRefreshableCredentials

        credentials = DeferredRefreshableCredentials(self.fetch, "appliance-web-identity")

        class Given(CredentialProvider):
            METHOD = "appliance-web-identity"

            def load(self):
                return credentials

        session.register_component("credential_provider", CredentialResolver([Given()]))


class SignIns(Protocol):
    """Where a source's sign-in is kept (the core gives the store's, core/__init__.py)."""

    async def save_refresh_token(self, source_id: int, grant: str, sealed: str) -> object: ...
    async def sign_in_refused(self, source_id: int, grant: str, reason: str, when: str) -> object: ...


class WebIdentities:
    """The sources' identities, one per source and sign-in; what they learn at refresh time
    (a rotated refresh token, a refused sign-in) is written back to the source."""

    def __init__(self, reactor, saved: SignIns, sealed, allow_loopback: bool, destinations: netcheck.Destinations):
        self._reactor = reactor
        self.destinations = destinations
        self._saved = saved
        self._sealed = sealed  # SealedSecrets
        self.allow_loopback = allow_loopback
        self._by_source: dict[int, WebIdentity] = {}

    def identity(self, source, config: dict, endpoint: str, region: str, verify_tls: bool) -> WebIdentity:
        oauth = config.get("oauth") or {}
        sts = oauth.get("sts_endpoint") or (
            endpoint if config.get("endpoint") else f"https://sts.{region}.amazonaws.com"
        )
        key = (oauth.get("grant", ""), oauth.get("token_url"), oauth.get("client_id"),
               oauth.get("client_secret_encrypted", ""), oauth.get("role_arn", ""), sts, region, verify_tls)  # fmt: skip
        found = self._by_source.get(source.id)
        if found is not None and found.key == key:
            return found
        what = f"sign-in of the source {source.name!r}"
        found = WebIdentity(
            self, source.id, oauth, sts, region, verify_tls,
            self._sealed.open_field(oauth, "refresh_token_encrypted", what),
            self._sealed.open_field(oauth, "client_secret_encrypted", f"client secret of the source {source.name!r}"),
            key,
        )  # fmt: skip
        if source.id:  # 0: a source being checked before it is saved
            self._by_source[source.id] = found
        return found

    def _later(self, work, what: str) -> None:
        self._reactor.callFromThread(lambda: spawn(work(), what))

    def rotated(self, identity: WebIdentity, refresh_token: str) -> None:
        """Called on a network thread: keep the provider's new refresh token (sealed)."""
        sealed = self._sealed.seal(refresh_token)
        self._later(lambda: self._saved.save_refresh_token(identity.source_id, identity.grant, sealed),
                    "saving a source's rotated refresh token")  # fmt: skip

    def refused(self, identity: WebIdentity) -> None:
        """Called on a network thread: the provider refused the saved sign-in."""
        log.warn("the provider refused the saved sign-in of source {id}", id=identity.source_id)
        when = to_iso(datetime.fromtimestamp(self._reactor.seconds(), UTC))
        self._later(
            lambda: self._saved.sign_in_refused(identity.source_id, identity.grant, REFUSED, when),
            "marking a source's sign-in as refused",
        )
