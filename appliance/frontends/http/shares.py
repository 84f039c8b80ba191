"""Share links over HTTP: the signed-in user's shares (`shares/`), and the public
side a link opens without sign-in (`shared/{token}/`).

A password-protected link takes its password in the `X-Share-Password` header of
each call, or once through `unlock/`, which answers a short-lived `access` value
to pass as `?access=` (so a plain browser link can download).
"""

from __future__ import annotations

import posixpath

from ...core.shares import Visit
from ...errors import Invalid
from .api import Resource, authenticate, client_address, json_api, page, paging, query, read_json, reply
from .files import MULTIPART_FRAMING, entries_view, multipart_boundary, receive_uploads, send_file


class SharesApi(Resource):
    """The caller's share links (an admin sees and manages all of the organisation's)."""

    app = json_api()

    async def _caller(self, request):
        return await authenticate(self.core, request, scope="files")

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        """Share links: the caller's own; an admin's list holds the organisation's"""
        account = await self._caller(request)
        limit, offset = paging(request)
        count, shares = await self.core.shares.list(account, limit, offset)
        return reply(request, page(request, shares, count))

    @app.route("/", methods=["POST"])
    async def create(self, request):
        """Share a file or folder by link (the token is shown in this reply only)"""
        account = await self._caller(request)
        body = read_json(request)
        created = await self.core.shares.create(account, body, client_address(request))
        return reply(request, created, 201)

    @app.route("/<int:share_id>/", methods=["GET"])
    async def item(self, request, share_id):
        account = await self._caller(request)
        return reply(request, await self.core.shares.get(account, share_id))

    @app.route("/<int:share_id>/", methods=["PATCH"])
    async def change(self, request, share_id):
        """Change a link's expiry, download limit or password"""
        account = await self._caller(request)
        changed = await self.core.shares.change(account, share_id, read_json(request), client_address(request))
        return reply(request, changed)

    @app.route("/<int:share_id>/", methods=["DELETE"])
    async def revoke(self, request, share_id):
        """Revoke a link"""
        account = await self._caller(request)
        await self.core.shares.revoke(account, share_id, client_address(request))
        request.setResponseCode(204)
        return b""


class SharedApi(Resource):
    """What a share link opens, without sign-in."""

    app = json_api()
    bodies = {"upload": "admit_upload"}  # the gate reads a drop box upload only once this allows it

    async def admit_upload(self, request, length: int | None, token: str) -> int | None:
        """Before any byte of a drop box upload is read: the link, its password, the body's
        kind and the owner's quota for Content-Length. The most bytes the body may have."""
        visit = await self._visit(request, token)
        multipart_boundary(request)
        size = None if length is None else max(0, length - MULTIPART_FRAMING)
        room = await visit.check_upload(size)
        return None if room is None else room + MULTIPART_FRAMING

    async def _visit(self, request, token: str) -> Visit:
        password = request.getHeader(b"x-share-password")
        return await self.core.shares.visit(
            token,
            client_address(request),
            password=password.decode("utf-8", "replace") if password is not None else None,
            access=query(request, "access") or None,
        )

    @app.route("/<token>/", methods=["GET"])
    async def metadata(self, request, token):
        """What a link is: kind, expiry, drop box or not, password needed; name and size once unlocked"""
        visit = await self._visit(request, token)
        return reply(request, await visit.metadata())

    @app.route("/<token>/unlock/", methods=["POST"])
    async def unlock(self, request, token):
        """Trade a link's password for a short-lived access value (?access=)"""
        password = read_json(request).get("password")
        visit = await self.core.shares.visit(
            token, client_address(request), password=password if isinstance(password, str) else ""
        )
        return reply(request, visit.access())

    @app.route("/<token>/files/", methods=["GET"])
    async def files(self, request, token):
        """A folder inside a shared folder (?path= from the shared folder)"""
        visit = await self._visit(request, token)
        path, entries = await visit.listing(query(request, "path", "/"))
        return reply(request, {"path": path, "entries": entries_view(entries)})

    @app.route("/<token>/download/", methods=["GET"])
    async def download(self, request, token):
        """Download the shared file, or a file of a shared folder (?path=); Range works; each counts"""
        visit = await self._visit(request, token)
        name, reader = await visit.open_download(query(request, "path", "/"))
        return await send_file(request, reader, name, visit.count_download)

    @app.route("/<token>/upload/", methods=["POST"])
    async def upload(self, request, token):
        """Upload files into a drop box (multipart); a taken name gets a number: name (1).ext"""
        visit = await self._visit(request, token)
        multipart_boundary(request)  # a wrong body is refused before anything is written
        try:
            saved = await receive_uploads(self.core.work, request, visit.open_upload)
        finally:
            visit.release()
        if not saved:
            raise Invalid("No file in the upload.", {"file": ["Choose a file to upload."]})
        return reply(
            request, {"files": [{"name": posixpath.basename(f["path"]), "size": f["size"]} for f in saved]}, 201
        )
