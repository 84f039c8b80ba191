"""An organisation's settings and branding over HTTP against the live daemon: the
PATCH rules, logo uploads (checked by their bytes, SVG sanitised), the public logo
URL and its headers, and the public branding of a subdomain."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image, PngImagePlugin

from ..api_client import Api, signed_in

PASSWORD = "user-password-1"
SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'; sandbox"


def png(width: int = 2, height: int = 1) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\x3d\x37\xff\xff" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def jpeg() -> bytes:
    """A baseline 8x8 grey JPEG: one block, DC difference 0, end of block."""

    def segment(marker: int, body: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body

    huffman_one_code = bytes([1] + [0] * 15) + b"\x00"
    return (
        b"\xff\xd8"
        + segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + segment(0xDB, b"\x00" + b"\x01" * 64)
        + segment(0xC0, b"\x08\x00\x08\x00\x08\x01\x01\x11\x00")
        + segment(0xC4, b"\x00" + huffman_one_code)
        + segment(0xC4, b"\x10" + huffman_one_code)
        + segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + b"\x3f\xff\xd9"
    )


EVIL_SVG = b"""<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10" onload="alert(1)">
  <script>alert(document.cookie)</script>
  <defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/></linearGradient></defs>
  <rect id="box" width="10" height="10" fill="#3D37FF" onclick="alert(2)"/>
  <rect width="5" height="5" fill="url(#g)" style="fill: url(https://evil.example/x.svg)"/>
  <use href="#box"/>
  <use xlink:href="https://evil.example/sprite.svg#icon"/>
  <image href="https://evil.example/track.png" width="1" height="1"/>
  <a href="javascript:alert(3)"><text>click</text></a>
  <foreignObject><iframe xmlns="http://www.w3.org/1999/xhtml" src="https://evil.example/"/></foreignObject>
  <style>@import url(https://evil.example/x.css); rect { fill: red }</style>
  <animate attributeName="href" to="javascript:alert(4)"/>
  <text x="1" y="9">Acme &amp; Co</text>
</svg>"""

ENTITY_SVG = b"""<?xml version="1.0"?>
<!DOCTYPE svg [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<svg xmlns="http://www.w3.org/2000/svg"><text>&lol2;</text></svg>"""

HTML = b"<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>"


def pixels(data: bytes) -> tuple:
    """What an image shows: its format, size and pixels (a re-encoded logo shows the same)."""
    with Image.open(io.BytesIO(data)) as image:
        return image.format, image.size, image.convert("RGBA").tobytes()


def multipart(name: str, data: bytes, content_type: str = "application/octet-stream") -> tuple[bytes, dict]:
    body = (
        b'--LoGo\r\nContent-Disposition: form-data; name="logo"; filename="' + name.encode() + b'"\r\n'
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + data + b"\r\n--LoGo--\r\n"
    )
    return body, {"Content-Type": "multipart/form-data; boundary=LoGo"}


def organisation(daemon, name: str) -> tuple[Api, dict]:
    """A new organisation with its admin signed in."""
    org_id = daemon.add_organisation(name)
    username = name.lower().replace(" ", "-") + "-admin"
    daemon.add_profile(username, org_id=org_id, is_admin=True)
    api = signed_in(daemon, username, PASSWORD)
    return api, api.get("organisation/").body[0]


def upload(api: Api, org_id: int, data: bytes, content_type: str = "application/octet-stream"):
    return api.post(f"organisation/{org_id}/logo/", raw=data, headers={"Content-Type": content_type})


def fetch(daemon, url: str):
    assert url.startswith("/api/portal/branding/logo/")
    return Api(daemon).get(url.removeprefix("/api/portal/"))  # no sign-in: branding is public


def audit_rows(daemon, org_id: int) -> list:
    return daemon.query("SELECT action, message FROM logs WHERE org_id = ? ORDER BY id", org_id)


# -- logos -------------------------------------------------------------------------------


def test_a_png_logo_is_stored_and_served_back_as_the_same_pixels_and_public(daemon):
    api, org = organisation(daemon, "Png Corp")
    image = png()
    reply = upload(api, org["id"], image, "image/png")
    assert reply.status == 200, reply.body
    url = reply.body["branding_logo"]
    assert url.startswith(f"/api/portal/branding/logo/{org['id']}/") and url.endswith(".png")
    served = fetch(daemon, url)
    assert served.status == 200 and pixels(served.raw) == pixels(image)
    assert served.headers["content-type"] == "image/png"
    assert served.headers["x-content-type-options"] == "nosniff"
    assert "immutable" in served.headers["cache-control"] and "max-age=31536000" in served.headers["cache-control"]
    assert served.headers["content-security-policy"] == SVG_POLICY
    # the file lives in the data dir under its hash
    stored = list((daemon.data_dir / "branding").glob(f"{org['id']}-*.png"))
    assert [p.read_bytes() for p in stored] == [served.raw]
    assert api.get("organisation/").body[0]["branding_logo"] == url
    assert ("organisation_logo", f"png-corp-admin uploaded a new logo (image/png, {len(served.raw)} bytes)") in [
        tuple(row) for row in audit_rows(daemon, org["id"])
    ]


def test_a_jpeg_logo_by_multipart_replaces_the_previous_one(daemon):
    api, org = organisation(daemon, "Jpeg Corp")
    first = upload(api, org["id"], png(), "image/png").body["branding_logo"]
    body, headers = multipart("logo.jpg", jpeg(), "image/jpeg")
    reply = api.post(f"organisation/{org['id']}/logo/", raw=body, headers=headers)
    assert reply.status == 200, reply.body
    url = reply.body["branding_logo"]
    assert url.endswith(".jpg") and url != first
    served = fetch(daemon, url)
    assert served.status == 200 and served.headers["content-type"] == "image/jpeg"
    assert pixels(served.raw)[:2] == ("JPEG", (8, 8))  # re-encoded: the same size, lossy pixels
    assert fetch(daemon, first).status == 404  # the old logo is gone, from the disk too
    assert [p.name.rsplit(".", 1)[1] for p in (daemon.data_dir / "branding").glob(f"{org['id']}-*")] == ["jpg"]


def test_an_svg_logo_is_sanitised_and_served_sandboxed(daemon):
    api, org = organisation(daemon, "Svg Corp")
    reply = upload(api, org["id"], EVIL_SVG, "text/html")  # the client's type does not matter
    assert reply.status == 200, reply.body
    served = fetch(daemon, reply.body["branding_logo"])
    assert served.status == 200 and served.headers["content-type"] == "image/svg+xml"
    assert served.headers["content-security-policy"] == SVG_POLICY
    assert served.headers["x-content-type-options"] == "nosniff"
    text = served.raw.decode()
    for banned in ("script", "onload", "onclick", "evil.example", "javascript", "foreignObject", "iframe",
                   "@import", "animate", "<a"):  # fmt: skip
        assert banned not in text, banned
    # what a logo needs survives
    assert '<rect id="box" width="10" height="10" fill="#3D37FF"/>' in text
    assert 'fill="url(#g)"' in text and '<use href="#box"/>' in text and 'stop-color="#fff"' in text
    assert "Acme &amp; Co" in text and 'viewBox="0 0 10 10"' in text
    assert text.count("<svg ") == 1 and 'xmlns="http://www.w3.org/2000/svg"' in text


def test_an_svg_with_a_doctype_or_entities_is_refused(daemon):
    api, org = organisation(daemon, "Entity Corp")
    reply = upload(api, org["id"], ENTITY_SVG, "image/svg+xml")
    assert reply.status == 400
    assert reply.body["logo"] == ["SVG files with a DOCTYPE, entities or external references are refused."]
    assert api.get("organisation/").body[0]["branding_logo"] is None


def test_other_files_are_refused_whatever_they_are_called(daemon):
    api, org = organisation(daemon, "Html Corp")
    body, headers = multipart("logo.png", HTML, "image/png")
    reply = api.post(f"organisation/{org['id']}/logo/", raw=body, headers=headers)
    assert reply.status == 400 and reply.body["logo"] == ["The file is not a PNG, JPEG or SVG image."]
    assert upload(api, org["id"], HTML, "image/png").status == 400
    assert upload(api, org["id"], b"GIF89a\x01\x00\x01\x00", "image/png").status == 400
    damaged = bytearray(png())
    damaged[30] ^= 0xFF  # inside IHDR: its CRC no longer matches
    bad = upload(api, org["id"], bytes(damaged), "image/png")
    assert bad.status == 400 and "damaged" in bad.body["logo"][0]
    assert upload(api, org["id"], png()[:-12], "image/png").status == 400  # no IEND
    assert upload(api, org["id"], png() + HTML, "image/png").status == 400  # something after IEND
    assert upload(api, org["id"], jpeg()[:-2], "image/jpeg").status == 400  # no end of image
    assert upload(api, org["id"], b"", "image/png").status == 400
    assert api.get("organisation/").body[0]["branding_logo"] is None
    assert list((daemon.data_dir / "branding").glob(f"{org['id']}-*")) == []


def test_an_oversized_logo_is_refused_with_a_clear_message(daemon):
    api, org = organisation(daemon, "Big Corp")
    huge = png() + b"\x00" * (600 * 1024)
    reply = upload(api, org["id"], huge, "image/png")
    assert reply.status == 400 and reply.body["logo"] == ["The logo is too large: at most 512 KiB."]
    body, headers = multipart("logo.png", huge)
    assert api.post(f"organisation/{org['id']}/logo/", raw=body, headers=headers).body == reply.body
    # just over the cap inside multipart's slack: the file itself is measured
    body, headers = multipart("logo.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * (512 * 1024))
    assert api.post(f"organisation/{org['id']}/logo/", raw=body, headers=headers).body == reply.body


def test_only_the_organisations_admins_may_change_it(daemon):
    admin, org = organisation(daemon, "Guarded Corp")
    daemon.add_profile("guarded-member", org_id=org["id"])
    member = signed_in(daemon, "guarded-member", PASSWORD)
    assert member.get(f"organisation/{org['id']}/").status == 200
    assert upload(member, org["id"], png(), "image/png").status == 403
    assert member.delete(f"organisation/{org['id']}/logo/").status == 403
    assert member.patch(f"organisation/{org['id']}/", {"name": "Mine"}).status == 403
    # another organisation's id is not found, for its admins too
    other_admin, other = organisation(daemon, "Other Corp")
    assert upload(other_admin, org["id"], png(), "image/png").status == 404
    assert other_admin.delete(f"organisation/{org['id']}/logo/").status == 404
    assert other_admin.patch(f"organisation/{org['id']}/", {"name": "Taken"}).status == 404
    assert other_admin.get(f"organisation/{org['id']}/").status == 404
    assert Api(daemon).post(f"organisation/{org['id']}/logo/", raw=png()).status == 401
    assert admin.get("organisation/").body[0]["name"] == "Guarded Corp"


def test_removing_the_logo(daemon):
    api, org = organisation(daemon, "Removing Corp")
    url = upload(api, org["id"], png(), "image/png").body["branding_logo"]
    reply = api.delete(f"organisation/{org['id']}/logo/")
    assert reply.status == 200 and reply.body["branding_logo"] is None
    assert fetch(daemon, url).status == 404
    assert list((daemon.data_dir / "branding").glob(f"{org['id']}-*")) == []
    assert ("organisation_logo", "removing-corp-admin removed the logo") in [
        tuple(row) for row in audit_rows(daemon, org["id"])
    ]
    assert api.delete(f"organisation/{org['id']}/logo/").status == 200  # nothing to remove is fine


def test_a_made_up_or_stale_logo_url_is_not_found(daemon):
    api, org = organisation(daemon, "Stale Corp")
    url = upload(api, org["id"], png(), "image/png").body["branding_logo"]
    name = url.rsplit("/", 1)[1]
    assert Api(daemon).get(f"branding/logo/{org['id'] + 1000}/{name}").status == 404
    assert Api(daemon).get(f"branding/logo/{org['id']}/{'0' * 32}.png").status == 404
    assert Api(daemon).get(f"branding/logo/{org['id']}/..%2f..%2fappliance.db").status == 404
    daemon.execute("UPDATE organisations SET status = 'deleted' WHERE id = ?", org["id"])
    assert fetch(daemon, url).status == 404


# -- settings and public branding --------------------------------------------------------------


def test_colour_is_validated_and_terms_round_trip(daemon):
    api, org = organisation(daemon, "Colour Corp")
    for bad in ("red", "#12345", "#1234567", "#GGGGGG", "123456", 123456, ""):
        reply = api.patch(f"organisation/{org['id']}/", {"branding_colour": bad})
        assert reply.status == 400 and reply.body == {
            "branding_colour": ["Enter a colour as #RRGGBB, for example #3D37FF."]
        }, bad
    terms = "Rules:\n1. Be nice.\n2. Ünïcode ✓ is fine."
    reply = api.patch(f"organisation/{org['id']}/", {"branding_colour": "#a1B2c3", "user_terms": terms})
    assert reply.status == 200
    assert reply.body["branding_colour"] == "#a1B2c3" and reply.body["user_terms"] == terms
    assert api.get(f"organisation/{org['id']}/").body["user_terms"] == terms
    assert api.get("organisation/").body[0]["user_terms"] == terms
    assert api.patch(f"organisation/{org['id']}/", {"user_terms": 5}).status == 400
    assert api.patch(f"organisation/{org['id']}/", {"name": "  "}).status == 400
    assert api.patch(f"organisation/{org['id']}/", {"name": None}).body == {"name": ["Enter a name."]}
    assert api.patch(f"organisation/{org['id']}/", {"name": "Colour Corp Ltd"}).body["name"] == "Colour Corp Ltd"
    messages = [row["message"] for row in audit_rows(daemon, org["id"]) if row["action"] == "organisation"]
    assert messages == [
        "colour-corp-admin changed the organisation: branding colour from the default to #a1B2c3, user terms changed",
        "colour-corp-admin changed the organisation: name from Colour Corp to Colour Corp Ltd",
    ]


def test_the_organisation_list_has_the_console_fields(daemon):
    api, org = organisation(daemon, "Fields Corp")
    assert {"id", "on_trial", "days_left_on_trial", "status", "name", "subdomain", "branding", "branding_logo",
            "branding_colour", "user_terms"} <= set(org)  # fmt: skip
    assert org["subdomain"] == "fields-corp" and org["on_trial"] is False and org["branding"] is False


def test_public_branding_by_subdomain_follows_the_switch(daemon):
    api, org = organisation(daemon, "Brand Corp")
    url = upload(api, org["id"], png(), "image/png").body["branding_logo"]
    api.patch(f"organisation/{org['id']}/", {"branding_colour": "#3D37FF"})
    public = Api(daemon)  # no sign-in
    assert public.get("branding/?subdomain=brand-corp").body == {
        "branding": False, "branding_logo": None, "branding_colour": None,
    }  # fmt: skip
    assert api.patch(f"organisation/{org['id']}/", {"branding": "yes"}).status == 400
    assert api.patch(f"organisation/{org['id']}/", {"branding": True}).body["branding"] is True
    reply = public.get("branding/?subdomain=Brand-Corp")
    assert reply.status == 200
    assert reply.body == {"branding": True, "branding_logo": url, "branding_colour": "#3D37FF"}
    assert pixels(fetch(daemon, reply.body["branding_logo"]).raw) == pixels(png())
    assert public.get("branding/?subdomain=no-such-brand").body["branding"] is False
    assert public.get("branding/").body["branding"] is False
    api.patch(f"organisation/{org['id']}/", {"branding": False})
    assert public.get("branding/?subdomain=brand-corp").body["branding"] is False


def bomb_png(side: int = 8192) -> bytes:
    """A PNG of side x side grey pixels, all black: 64 MiB decoded, ~65 KiB on the wire."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = zlib.compress(b"\x00" * ((side + 1) * side), 9)
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def test_a_logo_of_too_many_pixels_is_refused_before_it_is_decoded(daemon):
    """Issue 40, item 9: bytes are not the measure; pixels are (every visitor decodes it)."""
    api, org = organisation(daemon, "Bomb Corp")
    image = bomb_png()
    assert len(image) < 512 * 1024
    reply = upload(api, org["id"], image, "image/png")
    assert reply.status == 400, reply.body
    [message] = reply.body["logo"]
    assert "8192 x 8192 pixels" in message and "at most 4,194,304" in message, reply.body
    assert not list((daemon.data_dir / "branding").glob(f"{org['id']}-*"))
    # a wide banner of as many pixels is fine
    wide = io.BytesIO()
    Image.new("RGB", (8192, 512), (61, 55, 255)).save(wide, "PNG")
    assert upload(api, org["id"], wide.getvalue(), "image/png").status == 200


def test_a_logo_is_served_as_pixels_only_without_what_was_hidden_in_it(daemon):
    """Re-encoded on upload: text chunks, EXIF (GPS), comments and bytes after the end
    never reach a visitor."""
    api, org = organisation(daemon, "Meta Corp")
    meta = PngImagePlugin.PngInfo()
    meta.add_text("Comment", "secret-in-a-text-chunk")
    image = io.BytesIO()
    Image.new("RGBA", (64, 32), (61, 55, 255, 200)).save(image, "PNG", pnginfo=meta)
    reply = upload(api, org["id"], image.getvalue(), "image/png")
    assert reply.status == 200, reply.body
    served = fetch(daemon, reply.body["branding_logo"]).raw
    assert b"secret-in-a-text-chunk" not in served and pixels(served) == pixels(image.getvalue())

    exif = Image.Exif()
    exif[0x010E] = "secret-in-exif"  # ImageDescription
    photo = io.BytesIO()
    Image.new("RGB", (48, 48), (200, 30, 30)).save(photo, "JPEG", exif=exif, comment=b"secret-comment")
    assert b"secret-in-exif" in photo.getvalue() and b"secret-comment" in photo.getvalue()
    reply = upload(api, org["id"], photo.getvalue(), "image/jpeg")
    assert reply.status == 200, reply.body
    served = fetch(daemon, reply.body["branding_logo"]).raw
    assert b"secret-in-exif" not in served and b"secret-comment" not in served and b"Exif" not in served
    assert pixels(served)[:2] == ("JPEG", (48, 48))
