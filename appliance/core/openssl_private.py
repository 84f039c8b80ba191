"""Every use of a private name of pyOpenSSL, in one place (core/tls.py calls it).

pyOpenSSL has no public call for two things the appliance's TLS needs: choosing
the key-exchange groups (SSL_CTX_set1_curves_list) and asking whether a handshake
resumed a session (SSL_session_reused). Both are OpenSSL functions pyOpenSSL's
private `OpenSSL._util.lib` binds, called on the OpenSSL objects pyOpenSSL keeps in
a Context's `_context` and a Connection's `_ssl`. Written against pyOpenSSL 26.4
(constraints.txt). They are probed as this module is imported, so a pyOpenSSL
without them stops the daemon at start with a message saying so, instead of
failing a TLS handshake later.
"""

from __future__ import annotations

import OpenSSL
from OpenSSL import SSL

try:
    from OpenSSL._util import lib as _lib
except ImportError:  # pragma: no cover - a pyOpenSSL without the module
    _lib = None


def _missing() -> list[str]:
    """The private names of pyOpenSSL this module needs that the installed one lacks."""
    if _lib is None:
        return ["OpenSSL._util.lib"]
    missing = [f"OpenSSL._util.lib.{name}" for name in ("SSL_CTX_set1_curves_list", "SSL_session_reused")]
    missing = [name for name in missing if not hasattr(_lib, name.rsplit(".", 1)[1])]
    context = SSL.Context(SSL.TLS_METHOD)
    if not hasattr(context, "_context"):
        missing.append("SSL.Context._context")
    if not hasattr(SSL.Connection(context, None), "_ssl"):
        missing.append("SSL.Connection._ssl")
    return missing


_MISSING = _missing()
if _MISSING:
    raise ImportError(
        f"pyOpenSSL {OpenSSL.__version__} lacks {', '.join(_MISSING)}, which appliance/core/openssl_private.py "
        "uses (written against pyOpenSSL 26.4): install the version constraints.txt pins, or adapt that module."
    )


def set_groups(context: SSL.Context, groups: bytes) -> bool:
    """Restrict `context`'s key-exchange groups to `groups` ("X25519:prime256v1"); False if OpenSSL refuses."""
    return _lib.SSL_CTX_set1_curves_list(context._context, groups) == 1


def session_reused(connection: SSL.Connection) -> bool:
    """Whether the finished handshake of `connection` resumed a session."""
    return bool(_lib.SSL_session_reused(connection._ssl))
