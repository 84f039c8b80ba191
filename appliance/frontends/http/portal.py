"""Sessions, first run, the dashboard, the organisation and its branding."""

from __future__ import annotations

import multipart

from ...core.accounts import RESET_SENT
from ...core.images import MAX_LOGO_BYTES
from ...errors import Invalid, PermissionDenied
from .api import (
    Resource,
    authenticate,
    bearer,
    client_address,
    field_named,
    json_api,
    query,
    read_json,
    reply,
    required,
)

# a logo is served with no right to run anything, even opened on its own (SVG)
LOGO_POLICY = b"default-src 'none'; style-src 'unsafe-inline'; sandbox"
MULTIPART_SLACK = 16 * 1024  # room for the multipart framing around the file
TOO_LARGE = f"The logo is too large: at most {MAX_LOGO_BYTES // 1024} KiB."


def user_fields(profile) -> dict:
    return {
        "id": profile.id,
        "username": profile.username,
        "email": profile.email,
        "is_admin": profile.is_admin,
        "is_superuser": profile.is_superuser,
    }


def _file_part(body: bytes, boundary: str) -> bytes:
    """The first file (or `logo` field) of a multipart body held in memory."""
    parser = multipart.PushMultipartParser(boundary, max_header_size=8192, max_segment_count=16)
    parts, current = [], None
    try:
        for event in [*parser.parse(body), *parser.parse(b"")]:
            if isinstance(event, multipart.MultipartSegment):
                current = bytearray() if event.filename is not None or event.name == "logo" else None
            elif isinstance(event, (bytes, bytearray)) and current is not None:
                current += event
            elif event is None and current is not None:
                parts.append(bytes(current))
                current = None
    except multipart.ParserError as e:
        raise Invalid(f"The upload is not valid multipart data: {e}") from None
    if not parts:
        raise Invalid("No file in the upload.", {"logo": ["Choose a PNG, JPEG or SVG image."]})
    return parts[0]


async def logo_upload(work, request) -> bytes:
    """The uploaded logo's bytes: a multipart/form-data file, or the raw body (any
    Content-Type: the core decides what the bytes are). Larger than the cap: a 400."""
    limit = MAX_LOGO_BYTES + MULTIPART_SLACK
    length = request.getHeader(b"content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise Invalid(TOO_LARGE, {"logo": [TOO_LARGE]})
    content = request.content
    if content is None:
        raise Invalid("No file in the upload.", {"logo": ["Choose a PNG, JPEG or SVG image."]})
    content.seek(0)
    body = await work(content.read, limit + 1)
    if len(body) > limit:
        raise Invalid(TOO_LARGE, {"logo": [TOO_LARGE]})
    kind, options = multipart.parse_options_header((request.getHeader(b"content-type") or b"").decode("latin-1"))
    if kind == "multipart/form-data":
        if "boundary" not in options:
            raise Invalid("The multipart upload has no boundary.")
        return await work(_file_part, body, options["boundary"])
    return body


class PortalApi(Resource):
    """Routes under /api/portal/ that are not a collection of their own."""

    app = json_api()
    bodies = {"organisation_logo": "admit_logo"}  # not a JSON body: an image, read once allowed

    async def admit_logo(self, request, length: int | None, org_id: int) -> int:
        """Before a logo's bytes are read: an admin signed in, and a size a logo may have."""
        await authenticate(self.core, request, admin=True)
        limit = MAX_LOGO_BYTES + MULTIPART_SLACK
        if length is not None and length > limit:
            raise Invalid(TOO_LARGE, {"logo": [TOO_LARGE]})
        return limit

    # -- sessions --------------------------------------------------------------------

    @app.route("/token/", methods=["POST"])
    async def token(self, request):
        fields = required(read_json(request), "username", "password")
        live = await self.core.signin.sign_in(
            fields["username"],
            protocol="web",
            address=client_address(request),
            password=fields["password"],
            encrypted=request.isSecure(),
        )
        return reply(request, {**live.tokens, **user_fields(live.account.profile)})

    @app.route("/token/refresh/", methods=["POST"])
    async def refresh(self, request):
        token = read_json(request).get("refresh")
        if not isinstance(token, str) or not token:
            raise Invalid("A refresh token is required.", {"refresh": ["This field is required."]})
        return reply(request, await self.core.sessions.refresh(token, client_address(request), request.isSecure()))

    @app.route("/token/logout/", methods=["POST"])
    async def logout(self, request):
        """End the session of the refresh token in the body and of the Bearer access token"""
        token = read_json(request).get("refresh")
        access = bearer(request)
        await self.core.sessions.end(
            refresh=token if isinstance(token, str) and token else None,
            access=access if access and not self.core.api_tokens.looks_like(access) else None,
        )
        return reply(request, {"detail": "Signed out."})

    # -- password reset and invitations ------------------------------------------------

    @app.route("/password/reset/", methods=["POST"])
    async def reset(self, request):
        await self.core.accounts.request_reset(read_json(request).get("email"), client_address(request))
        return reply(request, {"detail": RESET_SENT})  # the same answer whether the address exists or not

    @app.route("/password/reset/confirm/", methods=["POST"])
    async def reset_confirm(self, request):
        fields = required(read_json(request), "uid", "token", "new_password1", "new_password2")
        await self.core.accounts.confirm(
            fields["uid"], fields["token"], fields["new_password1"], fields["new_password2"]
        )
        return reply(request, {"detail": "Your password has been set. You can sign in now."})

    @app.route("/password/change/", methods=["POST"])
    async def change_password(self, request):
        account = await authenticate(self.core, request)
        fields = required(read_json(request), "old_password", "new_password1", "new_password2")
        await self.core.accounts.change_password(
            account, fields["old_password"], fields["new_password1"], fields["new_password2"]
        )
        tokens = await self.core.sessions.issue(account.profile.id)  # this session goes on; the others end
        return reply(request, {"detail": "Your password has been changed.", **tokens})

    # -- first run --------------------------------------------------------------------

    @app.route("/initialized/", methods=["GET"])
    async def initialized(self, request):
        return reply(request, {"initialized": await self.core.organisations.initialized()})

    @app.route("/setup/", methods=["POST"])
    async def setup(self, request):
        fields = required(read_json(request), "organisation", "username", "email", "password")
        if await self.core.organisations.initialized():
            raise PermissionDenied("The appliance is already set up.")
        with field_named("organisation name", "organisation"):
            created = await self.core.organisations.initialize(
                fields["organisation"], fields["username"], fields["email"], fields["password"]
            )
        # the session it opens is the admin's first sign-in: last login set, audited
        live = await self.core.signin.first_sign_in(created.profile_id, address=client_address(request))
        return reply(request, {**live.tokens, **user_fields(live.account.profile)}, 201)

    # -- dashboard ----------------------------------------------------------------------

    @app.route("/dashboard/overview/", methods=["GET"])
    async def overview(self, request):
        """The dashboard's figures; ?period=day, week or month (the default) for its chart's bars."""
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.core.dashboard.overview(account, query(request, "period")))

    @app.route("/dashboard/information/", methods=["GET"])
    async def information(self, request):
        account = await authenticate(self.core, request)
        return reply(request, self.core.dashboard.information(account))

    # -- organisation -----------------------------------------------------------------

    @app.route("/organisation/", methods=["GET"])
    async def organisation(self, request):
        account = await authenticate(self.core, request)
        return reply(request, [self.core.organisation_settings.describe(account.organisation)])

    @app.route("/organisation/<int:org_id>/", methods=["GET", "PATCH"])
    async def organisation_item(self, request, org_id):
        settings = self.core.organisation_settings
        if request.method == b"PATCH":
            account = await authenticate(self.core, request, admin=True)
            return reply(request, await settings.change(account, org_id, read_json(request), client_address(request)))
        account = await authenticate(self.core, request)
        return reply(request, await settings.get(account, org_id))

    @app.route("/organisation/<int:org_id>/logo/", methods=["POST", "DELETE"])
    async def organisation_logo(self, request, org_id):
        """Upload the logo (PNG, JPEG or SVG, multipart or the raw body) or remove it"""
        account = await authenticate(self.core, request, admin=True)
        settings = self.core.organisation_settings
        if request.method == b"DELETE":
            return reply(request, await settings.remove_logo(account, org_id, client_address(request)))
        data = await logo_upload(self.core.work, request)
        return reply(request, await settings.set_logo(account, org_id, data, client_address(request)))

    @app.route("/branding/", methods=["GET"])
    async def branding(self, request):
        return reply(request, await self.core.organisation_settings.public_branding(query(request, "subdomain")))

    @app.route("/branding/logo/<int:org_id>/<name>", methods=["GET", "HEAD"])
    async def branding_logo(self, request, org_id, name):
        """An organisation's logo (public; the name changes with the content)"""
        logo = await self.core.organisation_settings.logo(org_id, name)
        request.setHeader(b"content-type", logo.content_type.encode())
        request.setHeader(b"content-length", str(len(logo.data)).encode())
        request.setHeader(b"cache-control", b"public, max-age=31536000, immutable")
        request.setHeader(b"x-content-type-options", b"nosniff")
        request.setHeader(b"content-security-policy", LOGO_POLICY)
        request.setHeader(b"content-disposition", b"inline")
        return b"" if request.method == b"HEAD" else logo.data

    @app.route("/", branch=True)
    def not_found(self, request):
        return reply(request, {"detail": "Not found."}, 404)
