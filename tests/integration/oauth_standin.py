"""A stand-in OAuth2 / OpenID Connect provider for tests (not a real provider): an
http.server on 127.0.0.1 in a thread, with

- GET /authorize: checks client_id, response_type=code, redirect_uri (the registered
  one) and an S256 code_challenge, then redirects to redirect_uri with a one-use code
  and the state; with `deny` set it redirects with error=access_denied instead;
- POST /token: checks the client (HTTP Basic, client_secret_basic), then
  grant_type=authorization_code (code, redirect_uri, and SHA256(code_verifier) against
  the challenge: otherwise invalid_grant) or grant_type=refresh_token (a live refresh
  token, rotated on each use); issues an id_token (a JWT signed HS256 with `jwt_key`),
  an access_token and a refresh_token. `revoke()` kills every refresh token.

What it received is kept in `authorizations` and `token_requests` so tests can check
that PKCE and state were used."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt

CLIENT_ID = "appliance-files"
CLIENT_SECRET = "stand-in-client-secret"


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


class StandInProvider:
    def __init__(self, redirect_uri: str = ""):
        self.jwt_key = secrets.token_hex(32)
        self.redirect_uri = redirect_uri  # the registered one ("" : any, set it once known)
        self.deny = False
        self.rotate = True
        self.authorizations: list[dict] = []  # the query of each /authorize
        self.token_requests: list[dict] = []  # the form of each /token, with "authorization"
        self.issued_refresh_tokens: list[str] = []
        self._codes: dict[str, dict] = {}
        self._refresh: set[str] = set()
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                if url.path != "/authorize":
                    return self._json(404, {"error": "not_found"})
                provider._authorize(self, dict(urllib.parse.parse_qsl(url.query)))

            def do_POST(self):
                if urllib.parse.urlsplit(self.path).path != "/token":
                    return self._json(404, {"error": "not_found"})
                length = int(self.headers.get("content-length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                status, body = provider._token(form, self.headers.get("authorization", ""))
                self._json(status, body)

            def _json(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("cache-control", "no-store")
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="oauth-stand-in", daemon=True)

    def start(self) -> StandInProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def revoke(self) -> None:
        with self._lock:
            self._refresh.clear()

    # -- the endpoints -----------------------------------------------------------------------

    def _authorize(self, handler, query: dict) -> None:
        self.authorizations.append(query)
        redirect = query.get("redirect_uri", "")
        if query.get("client_id") != CLIENT_ID or (self.redirect_uri and redirect != self.redirect_uri):
            return handler._json(400, {"error": "invalid_request", "error_description": "unknown client or redirect"})
        back: dict = {"state": query.get("state", "")}
        if self.deny:
            back.update(error="access_denied", error_description="The user said no.")
        elif (
            query.get("response_type") != "code"
            or query.get("code_challenge_method") != "S256"
            or not query.get("code_challenge")
        ):
            back.update(error="invalid_request", error_description="PKCE S256 is required.")
        else:
            code = secrets.token_urlsafe(24)
            with self._lock:
                self._codes[code] = {"challenge": query["code_challenge"], "redirect_uri": redirect,
                                     "scope": query.get("scope", "")}  # fmt: skip
            back["code"] = code
        handler.send_response(302)
        handler.send_header("location", redirect + "?" + urllib.parse.urlencode(back))
        handler.send_header("content-length", "0")
        handler.end_headers()

    def _token(self, form: dict, authorization: str) -> tuple[int, dict]:
        self.token_requests.append({**form, "authorization": authorization})
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if authorization != expected:
            return 401, {"error": "invalid_client", "error_description": "client authentication failed"}
        with self._lock:
            if form.get("grant_type") == "authorization_code":
                found = self._codes.pop(form.get("code", ""), None)  # one use
                if found is None or found["redirect_uri"] != form.get("redirect_uri"):
                    return 400, {"error": "invalid_grant", "error_description": "unknown code or redirect_uri"}
                if s256(form.get("code_verifier", "")) != found["challenge"]:
                    return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
                return 200, self._tokens(found["scope"])
            if form.get("grant_type") == "refresh_token":
                old = form.get("refresh_token", "")
                if old not in self._refresh:
                    return 400, {"error": "invalid_grant", "error_description": "refresh token revoked or unknown"}
                if self.rotate:
                    self._refresh.discard(old)
                return 200, self._tokens("openid", old if not self.rotate else None)
        return 400, {"error": "unsupported_grant_type"}

    def _tokens(self, scope: str, refresh: str | None = None) -> dict:
        now = int(time.time())
        claims = {"iss": self.url, "sub": "admin-at-stand-in", "aud": CLIENT_ID, "iat": now, "exp": now + 300}
        if refresh is None:
            refresh = "rt-" + secrets.token_urlsafe(24)
            self._refresh.add(refresh)
            self.issued_refresh_tokens.append(refresh)
        return {
            "access_token": "at-" + secrets.token_urlsafe(24),
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": jwt.encode(claims, self.jwt_key, algorithm="HS256"),
            "refresh_token": refresh,
            "scope": scope,
        }
