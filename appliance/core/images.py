"""Organisation logos: what an uploaded file really is (by its bytes, never by the
name or Content-Type the client sent), a minimal structural check of PNG and JPEG
with a cap on their pixels (read from the header, before anything is decoded: every
visitor's browser decodes the logo), then re-encoded (Pillow) so what is served is
pixels only, no metadata, text, profile data or bytes after the end; and SVG
rewritten to a safe subset (no script, event handlers, external references,
foreignObject, DOCTYPE or entities). Pure functions: run them on the bulk pool."""

from __future__ import annotations

import io
import re
import struct
import zlib
from dataclasses import dataclass
from xml.etree.ElementTree import Element, ParseError
from xml.sax.saxutils import escape, quoteattr

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from ..errors import Invalid

MAX_LOGO_BYTES = 512 * 1024
MAX_SIDE = 8192  # pixels: a logo, not a poster
MAX_PIXELS = 2048 * 2048  # width x height: 16 MiB decoded as RGBA in a visitor's browser
MAX_DEPTH = 64  # nested SVG elements
NOT_AN_IMAGE = "The file is not a PNG, JPEG or SVG image."

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
XML_NS = "http://www.w3.org/XML/1998/namespace"


@dataclass(frozen=True)
class Logo:
    extension: str  # png, jpg, svg
    content_type: str
    data: bytes


def logo(data: bytes) -> Logo:
    """The uploaded bytes as a logo that is safe to serve, or Invalid saying why not."""
    if not data:
        raise Invalid("The file is empty.", {"logo": ["Choose a PNG, JPEG or SVG image."]})
    if len(data) > MAX_LOGO_BYTES:
        raise Invalid(
            f"The logo is too large: at most {MAX_LOGO_BYTES // 1024} KiB.",
            {"logo": [f"The logo is too large: at most {MAX_LOGO_BYTES // 1024} KiB."]},
        )
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        _check_png(data)
        return Logo("png", "image/png", _reencoded(data, "PNG"))
    if data.startswith(b"\xff\xd8\xff"):
        _check_jpeg(data)
        return Logo("jpg", "image/jpeg", _reencoded(data, "JPEG"))
    if _looks_like_xml(data) and b"<svg" in data:
        return Logo("svg", "image/svg+xml", sanitise_svg(data))
    raise _refused(NOT_AN_IMAGE)


def _refused(message: str) -> Invalid:
    return Invalid(message, {"logo": [message]})


# -- PNG and JPEG: the structure, minimally -------------------------------------------------


def _check_png(data: bytes) -> None:
    """Chunks with valid CRCs from IHDR (sensible size) to IEND, and nothing after it."""
    offset, first, seen_data = 8, True, False
    while True:
        if offset + 12 > len(data):
            raise _refused("The PNG file is cut short.")
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        end = offset + 12 + length
        if end > len(data):
            raise _refused("The PNG file is cut short.")
        body = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[end - 4 : end])
        if zlib.crc32(kind + body) != crc:
            raise _refused("The PNG file is damaged (a checksum does not match).")
        if first:
            if kind != b"IHDR" or length != 13:
                raise _refused("The PNG file has no header.")
            width, height = struct.unpack(">II", body[:8])
            _check_size(width, height)
            first = False
        seen_data |= kind == b"IDAT"
        offset = end
        if kind == b"IEND":
            break
    if not seen_data:
        raise _refused("The PNG file has no image data.")
    if offset != len(data):
        raise _refused("The PNG file has data after its end.")


SOF_MARKERS = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _check_jpeg(data: bytes) -> None:
    """Segments from SOI to the start of scan, one frame header with a sensible size,
    and the end-of-image marker at the end."""
    offset, frame = 2, False
    while True:
        if offset + 4 > len(data) or data[offset] != 0xFF:
            raise _refused("The JPEG file is damaged.")
        marker = data[offset + 1]
        if marker == 0xFF:  # fill byte
            offset += 1
            continue
        (length,) = struct.unpack(">H", data[offset + 2 : offset + 4])
        if length < 2 or offset + 2 + length > len(data):
            raise _refused("The JPEG file is cut short.")
        if marker in SOF_MARKERS:
            if length < 7:
                raise _refused("The JPEG file is damaged.")
            height, width = struct.unpack(">HH", data[offset + 5 : offset + 9])
            _check_size(width, height)
            frame = True
        offset += 2 + length
        if marker == 0xDA:  # start of scan: entropy-coded data follows
            break
    if not frame:
        raise _refused("The JPEG file has no frame header.")
    if not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise _refused("The JPEG file is cut short.")


def _check_size(width: int, height: int) -> None:
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise _refused(f"The image must be between 1 and {MAX_SIDE} pixels wide and high.")
    if width * height > MAX_PIXELS:
        raise _refused(
            f"The image is {width} x {height} pixels: a logo may have at most {MAX_PIXELS:,} "
            f"(2048 x 2048, or as many in another shape). Make it smaller and upload it again."
        )


def _reencoded(data: bytes, kind: str) -> bytes:
    """The image's pixels written anew as `kind` (PNG or JPEG): its palette and
    transparency kept, nothing else of the upload (text chunks, EXIF and GPS, comments,
    colour profiles, data after the end). Refused when it does not decode."""
    from PIL import Image  # lazily: the daemon needs it only when a logo is uploaded

    try:
        with Image.open(io.BytesIO(data), formats=[kind]) as image:
            if image.width * image.height > MAX_PIXELS:  # the header said otherwise than the decoder
                _check_size(image.width, image.height)
            image.load()
            if kind == "PNG":
                keep = image if image.mode in ("1", "L", "LA", "P", "RGB", "RGBA") else image.convert("RGBA")
                transparency = image.info.get("transparency")
                keep.info = {"transparency": transparency} if transparency is not None and keep is image else {}
                options = {"optimize": True}
            else:
                keep = image if image.mode in ("L", "RGB") else image.convert("RGB")
                keep.info = {}
                options = {"quality": 90, "optimize": True}
            out = io.BytesIO()
            keep.save(out, kind, **options)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        raise _refused(f"The {'PNG' if kind == 'PNG' else 'JPEG'} file could not be decoded: {e}") from None
    if out.tell() > MAX_LOGO_BYTES:
        raise _refused(f"The logo does not fit in {MAX_LOGO_BYTES // 1024} KiB once re-encoded: make it smaller.")
    return out.getvalue()


# -- SVG: a safe subset ------------------------------------------------------------------


def _looks_like_xml(data: bytes) -> bool:
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"<")


ELEMENTS = {
    "svg", "g", "defs", "title", "desc", "symbol", "use", "path", "rect", "circle", "ellipse", "line",
    "polyline", "polygon", "text", "tspan", "linearGradient", "radialGradient", "stop", "clipPath", "mask",
    "pattern", "image", "style", "marker", "filter", "feGaussianBlur", "feOffset", "feBlend", "feColorMatrix",
    "feFlood", "feComposite", "feMerge", "feMergeNode", "feMorphology", "switch",
}  # fmt: skip
ATTRIBUTES = {
    "id", "class", "style", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "fx", "fy", "d",
    "points", "width", "height", "viewBox", "preserveAspectRatio", "transform", "version", "fill", "fill-opacity",
    "fill-rule", "stroke", "stroke-width", "stroke-linecap", "stroke-linejoin", "stroke-miterlimit",
    "stroke-dasharray", "stroke-dashoffset", "stroke-opacity", "opacity", "color", "display", "visibility",
    "clip-path", "clip-rule", "clipPathUnits", "mask", "maskUnits", "maskContentUnits", "font-family",
    "font-size", "font-weight", "font-style", "font-variant", "letter-spacing", "word-spacing",
    "text-anchor", "dominant-baseline", "alignment-baseline", "baseline-shift", "text-decoration", "dx", "dy",
    "rotate", "textLength", "lengthAdjust", "offset", "stop-color", "stop-opacity", "gradientUnits",
    "gradientTransform", "spreadMethod", "patternUnits", "patternContentUnits", "patternTransform",
    "markerWidth", "markerHeight", "markerUnits", "refX", "refY", "orient", "marker-start", "marker-mid",
    "marker-end", "filter", "filterUnits", "primitiveUnits", "in", "in2", "result", "stdDeviation", "mode",
    "type", "values", "operator", "k1", "k2", "k3", "k4", "radius", "flood-color", "flood-opacity",
    "shape-rendering", "text-rendering", "image-rendering", "color-interpolation-filters", "vector-effect",
    "mix-blend-mode", "isolation", "paint-order", "media",
}  # fmt: skip
SAFE_HREF = re.compile(r"^(#[\w.:-]*|data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*)$")
URL_REF = re.compile(r"url\s*\(\s*(['\"]?)(.*?)\1\s*\)", re.IGNORECASE | re.DOTALL)


def sanitise_svg(data: bytes) -> bytes:
    """Parse with a hardened parser (no DTD, entities or external loads) and write back
    only allow-listed SVG elements and attributes."""
    try:
        root = fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise _refused("SVG files with a DOCTYPE, entities or external references are refused.") from None
    except (ParseError, ValueError, UnicodeDecodeError):
        raise _refused(NOT_AN_IMAGE) from None
    if root.tag != f"{{{SVG_NS}}}svg":
        raise _refused(NOT_AN_IMAGE)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + _write(root).encode("utf-8")


def _local(tag: str) -> str | None:
    """The SVG element's local name; None for any other namespace."""
    if isinstance(tag, str) and tag.startswith(f"{{{SVG_NS}}}"):
        return tag[len(SVG_NS) + 2 :]
    return None


def _safe_css(text: str) -> bool:
    """No escapes (they could spell url or @import), no imports, no script, and url() only to #fragments."""
    if "\\" in text:
        return False
    lowered = text.lower()
    if any(word in lowered for word in ("@import", "expression", "javascript:", "behavior", "-moz-binding")):
        return False
    return all(m.group(2).strip().startswith("#") for m in URL_REF.finditer(lowered))


def _attributes(element: Element) -> dict[str, str]:
    kept = {}
    for name, value in element.attrib.items():
        if name == f"{{{XLINK_NS}}}href" or name == "href":
            if SAFE_HREF.match(value.strip()):
                kept["href"] = value.strip()
            continue
        if name == f"{{{XML_NS}}}space":
            kept["xml:space"] = value
            continue
        if name not in ATTRIBUTES or name.lower().startswith("on"):
            continue  # other namespaces, event handlers, anything unknown
        if ("url(" in value.lower() or "\\" in value or name == "style") and not _safe_css(value):
            continue
        kept[name] = value
    return kept


def _write(element: Element, depth: int = 0) -> str:
    if depth > MAX_DEPTH:
        raise _refused(f"The SVG file nests elements more than {MAX_DEPTH} deep.")
    name = _local(element.tag)
    if name is None or name not in ELEMENTS:
        return ""  # and its whole subtree: script, foreignObject, animate, a, other namespaces
    text = element.text or ""
    if name == "style" and not _safe_css(text):
        return ""
    attributes = _attributes(element)
    if depth == 0:
        attributes = {"xmlns": SVG_NS, **attributes}
    opening = name + "".join(f" {key}={quoteattr(value)}" for key, value in attributes.items())
    inner = escape(text) + "".join(_write(child, depth + 1) + escape(child.tail or "") for child in element)
    return f"<{opening}>{inner}</{name}>" if inner else f"<{opening}/>"
