"""Logo checks by their bytes: SVG rewritten to a safe subset, edge cases the HTTP
tests do not reach."""

from __future__ import annotations

import pytest

from appliance.core.images import MAX_DEPTH, logo, sanitise_svg
from appliance.errors import Invalid

SVG = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">{}</svg>'


def clean(inner: str) -> str:
    return sanitise_svg(SVG.format(inner).encode()).decode()


def test_css_that_reaches_out_is_dropped_and_plain_css_kept():
    assert "style" not in clean('<rect style="fill: u\\72l(https://x.example/a)"/>')
    assert "@import" not in clean("<style>@\\69mport 'https://x.example/a.css';</style>")
    assert "behavior" not in clean('<rect style="behavior: url(#x)"/>')
    kept = clean('<style>.a { fill: #fff } .b > .c { stroke: url(#g) }</style><rect class="a" style="opacity: .5"/>')
    assert ".b &gt; .c" in kept and 'style="opacity: .5"' in kept


def test_links_only_to_fragments_or_embedded_images():
    png = "data:image/png;base64,iVBORw0KGgo="
    out = clean(f'<image xlink:href="{png}"/><image href="data:image/svg+xml;base64,PHN2Zz4="/><use href="#a"/>')
    assert f'href="{png}"' in out and "svg+xml" not in out and 'href="#a"' in out
    assert "href" not in clean('<use xlink:href="javascript:alert(1)"/>')


def test_other_namespaces_and_events_go():
    out = clean('<g xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape" inkscape:label="x" '
                'onmouseover="alert(1)" ONCLICK="alert(2)"><inkscape:thing/><set attributeName="x"/></g>')  # fmt: skip
    assert out.endswith("<g/></svg>")


def test_entities_doctype_and_nesting_are_refused():
    bomb = b'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><svg>&b;</svg>'
    with pytest.raises(Invalid, match="DOCTYPE"):
        logo(bomb)
    with pytest.raises(Invalid, match="DOCTYPE"):
        logo(b'<!DOCTYPE svg SYSTEM "file:///etc/passwd"><svg xmlns="http://www.w3.org/2000/svg"/>')
    deep = SVG.format("<g>" * (MAX_DEPTH + 5) + "</g>" * (MAX_DEPTH + 5)).encode()
    with pytest.raises(Invalid, match="deep"):
        logo(deep)
    with pytest.raises(Invalid, match="not a PNG, JPEG or SVG"):
        logo(b'<svg xmlns="http://www.w3.org/1999/xhtml"/>')  # not the SVG namespace
    with pytest.raises(Invalid, match="not a PNG, JPEG or SVG"):
        logo(b"<svg unclosed")
