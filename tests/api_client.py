"""A small client for the portal API of a live daemon (urllib: no extra dependency)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass


@dataclass
class Reply:
    status: int
    body: object
    headers: dict
    raw: bytes


class Api:
    def __init__(self, daemon, token: str | None = None):
        self.base = f"http://127.0.0.1:{daemon.http_port}/api/portal/"
        self.token = token
        self.refresh_token: str | None = None

    def call(self, method: str, path: str, body=None, headers: dict | None = None, raw: bytes | None = None) -> Reply:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, payload, reply_headers = response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as e:
            status, payload, reply_headers = e.code, e.read(), dict(e.headers)
        try:
            parsed = json.loads(payload) if payload else None
        except ValueError:
            parsed = None
        return Reply(status, parsed, {k.lower(): v for k, v in reply_headers.items()}, payload)

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("POST", path, body, **kw)

    def patch(self, path, body=None, **kw):
        return self.call("PATCH", path, body, **kw)

    def delete(self, path, **kw):
        return self.call("DELETE", path, **kw)

    def login(self, username: str, password: str) -> Reply:
        reply = self.post("token/", {"username": username, "password": password})
        if reply.status == 200:
            self.token, self.refresh_token = reply.body["access"], reply.body["refresh"]
        return reply


def signed_in(daemon, username: str, password: str) -> Api:
    api = Api(daemon)
    reply = api.login(username, password)
    assert reply.status == 200, reply.body
    return api


MULTIPART = {"Content-Type": "multipart/form-data; boundary=XyZ"}


def multipart(name: str, data: bytes) -> bytes:
    """A files/upload/ body holding one file `name` (send it with headers=MULTIPART)."""
    return (
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="' + name.encode() + b'"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--XyZ--\r\n"
    )
