"""Serving the built React console: files from the package's static folder, and
index.html for every other path (client-side routes), uncached; hashed assets
cached for a year."""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import mimetypes
import os
import re
from pathlib import Path

from twisted.web import resource, static

INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE)
HASHED = re.compile(r"\.[0-9a-f]{8,}\.(js|css|svg|png|jpg|woff2?|ttf|map)$")
PLACEHOLDER = b"""<!doctype html><html><head><meta charset="utf-8"><title>Appliance</title></head>
<body><p>The web console is not built. Run <code>make build</code>.</p></body></html>"""


def policy_for(page: bytes, base_policy: bytes) -> bytes:
    """The page's Content-Security-Policy: the site's, plus the hash of each inline
    script the build put in it (parcel's import map), and nothing else inline."""
    hashes = [
        b"'sha256-" + base64.b64encode(hashlib.sha256(body).digest()) + b"'" for body in INLINE_SCRIPT.findall(page)
    ]
    return base_policy + b"; script-src 'self' " + b" ".join(hashes) if hashes else base_policy


def static_dir() -> Path:
    return Path(str(importlib.resources.files("appliance") / "static"))


class ConsoleResource(resource.Resource):
    """The console's files, with the SPA fallback to index.html."""

    isLeaf = True

    def __init__(self, root: Path | None = None):
        super().__init__()
        self.root = (root or static_dir()).resolve()

    def render_GET(self, request):
        relative = "/".join(p.decode("utf-8", "replace") for p in request.postpath if p)
        candidate = (self.root / relative).resolve() if relative else None
        if candidate and candidate.is_file() and candidate.is_relative_to(self.root) and candidate.name != "index.html":
            cache = "public, max-age=31536000, immutable" if HASHED.search(candidate.name) else "no-cache"
            request.setHeader(b"cache-control", cache.encode())
            kind, _ = mimetypes.guess_type(candidate.name)
            request.setHeader(b"content-type", (kind or "application/octet-stream").encode())
            request.setHeader(b"content-length", str(os.path.getsize(candidate)).encode())
            if request.method == b"HEAD":
                return b""
            return candidate.read_bytes()
        index = self.root / "index.html"
        page = index.read_bytes() if index.is_file() else PLACEHOLDER
        request.setHeader(b"cache-control", b"no-cache")
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        policy = request.responseHeaders.getRawHeaders(b"content-security-policy", [b""])[0]
        if policy:
            request.setHeader(b"content-security-policy", policy_for(page, policy))
        return page

    render_HEAD = render_GET


__all__ = ["ConsoleResource", "static", "static_dir"]
