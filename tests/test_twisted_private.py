"""The private names of Twisted (and of Klein, a Twisted project) the appliance leans on, pinned.

Each part of the package reaches Twisted's private API in one module only: its
twisted_private.py (appliance/frontends/{ftp,sftp,http}/, appliance/frontends/ for
the TCP transport, appliance/mail/). These tests fail

- when an upgrade of Twisted removes one of those names, or changes the source of
  a private method we override or call: the message says what to re-read in
  Twisted and which of our code depends on it. Once checked (and our code adapted),
  record the new hash here;
- when a private name of Twisted is used anywhere else in the package: move it into
  the twisted_private.py beside it, behind a public name, and pin it here.

Recorded against Twisted 26.10.0.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import pathlib
import re

import klein as klein_package
import pytest
import twisted as twisted_package
from klein import Klein
from twisted.conch.ssh.connection import SSHConnection
from twisted.conch.ssh.filetransfer import FileTransferServer
from twisted.conch.ssh.transport import SSHTransportBase
from twisted.conch.ssh.userauth import SSHUserAuthServer
from twisted.internet.abstract import FileDescriptor
from twisted.mail.imap4 import IMAP4Client
from twisted.protocols.tls import TLSMemoryBIOProtocol
from twisted.web.http import HTTPChannel, Request

import appliance

FTP = "appliance/frontends/ftp/twisted_private.py"
SFTP = "appliance/frontends/sftp/twisted_private.py"
HTTP = "appliance/frontends/http/twisted_private.py"
TCP = "appliance/frontends/twisted_private.py"
MAIL = "appliance/mail/twisted_private.py"

# (class, private method, sha256 of its source (first 16 hex digits), who depends on it and how)
METHODS = [
    (
        TLSMemoryBIOProtocol,
        "_flushSendBIO",
        "c034168e4f0faf2c",
        f"{FTP} HoldingTLS: every byte to the socket goes through it, so holding it back holds TLS 1.3 session tickets (transfer.DataTLS)",
    ),
    (
        TLSMemoryBIOProtocol,
        "_write",
        "b795cc8e83620d7d",
        f"{FTP} HoldingTLS: application data is sent through it (ends the hold)",
    ),
    (
        TLSMemoryBIOProtocol,
        "_shutdownTLS",
        "f72004ba90a03215",
        f"{FTP} HoldingTLS: our close_notify is sent through it (ends the hold)",
    ),
    (
        TLSMemoryBIOProtocol,
        "_tlsShutdownFinished",
        "e78b042366fe0af0",
        f"{FTP} HoldingTLS: the TLS shutdown ends through it (ends the hold)",
    ),
    (
        SSHUserAuthServer,
        "_cbFinishedAuth",
        "f4521485b1a3dd5f",
        f"{SFTP} UserAuthServer.signed_in: called after it has started the next service",
    ),
    (
        SSHUserAuthServer,
        "_ebBadAuth",
        "ae5dea1b4e9a5c4f",
        f"{SFTP} UserAuthServer.refused: its argument is the sign-in's Failure, answered with USERAUTH_FAILURE or a disconnect",
    ),
    (
        FileTransferServer,
        "_sendStatus",
        "f309d6a4da874967",
        f"{SFTP} FileTransferServerBase.send_status: (request id, code, message) sends FXP_STATUS",
    ),
    (
        FileTransferServer,
        "_cbStatus",
        "d2de77a6ef31db13",
        f"{SFTP} FileTransferServerBase.status_ok: a callback sending FX_OK",
    ),
    (
        FileTransferServer,
        "_cbExtended",
        "ebf2dbbc156d6d31",
        f"{SFTP} FileTransferServerBase.extended_reply: a callback sending FXP_EXTENDED_REPLY",
    ),
    (
        FileTransferServer,
        "_ebStatus",
        "df467eaa4e1cb5ba",
        f"{SFTP} FileTransferServerBase.request_failed: conch's packet handlers report every failure through it",
    ),
    (
        FileTransferServer,
        "_cbOpenFile",
        "fcddb3764cee40f8",
        f"{SFTP} FileTransferServerBase.file_opened: conch's OPEN ends in it (SftpProtocol drops a file opened after the client left)",
    ),
    (
        FileTransferServer,
        "_cbOpenDirectory",
        "ab65c6a375be3d69",
        f"{SFTP} FileTransferServerBase.directory_opened: conch's OPENDIR ends in it",
    ),
    (
        SSHTransportBase,
        "_allowedKeyExchangeMessageType",
        "520f80493fb433cf",
        f"{SFTP} held_for_key_exchange: what transport.PacketTransport.send_parts may send during a key exchange, as conch's sendPacket decides",
    ),
    (
        HTTPChannel,
        "_send100Continue",
        "2c18e419f7ef802a",
        f"{HTTP} ChannelBase.continue_requested/send_100_continue: HTTPChannel calls it as a request's headers end; the gate delays it until the body is admitted",
    ),
    (
        HTTPChannel,
        "_respondToBadRequestAndDisconnect",
        "c7ccc0f4450a7d6b",
        f"{HTTP} ChannelBase.bad_request: HTTPChannel calls it for a malformed request (the gate answers a complete JSON 400)",
    ),
    (
        IMAP4Client,
        "_extraInfo",
        "f4999d944d505afd",
        f"{MAIL} QuietByeClient: IMAP4Client hands it the untagged responses no command asked for, and it logs the unknown ones",
    ),
]

# (class, private attribute, who depends on it and how)
ATTRIBUTES = [
    (TLSMemoryBIOProtocol, "_handshakeDone", f"{FTP} HoldingTLS.handshake_done: True once the TLS handshake is over"),
    (SSHTransportBase, "_keyExchangeState", f"{SFTP} key_exchange_idle/held_for_key_exchange: the key exchange state"),
    (SSHTransportBase, "_KEY_EXCHANGE_NONE", f"{SFTP} key_exchange_idle: the state when no key exchange runs"),
    (
        SSHTransportBase,
        "_blockedByKeyExchange",
        f"{SFTP} held_for_key_exchange: conch's queue of (type, payload) sent once the key exchange ends",
    ),
    (SSHConnection, "_log", f"{SFTP} connection_log: the connection's Logger"),
    (FileDescriptor, "_tempDataLen", f"{TCP} unsent_bytes/nothing_unsent: bytes written and not yet in dataBuffer"),
    (
        FileDescriptor,
        "_writeDisconnected",
        f"{TCP} write_side_closed: the write side was closed (loseWriteConnection)",
    ),
    (
        HTTPChannel,
        "_HTTPChannel__first_line",
        f"{HTTP} ChannelBase.reading_request_line: the next line is a request line",
    ),
    (HTTPChannel, "_receivedHeaderSize", f"{HTTP} ChannelBase.received_header_size: bytes of the header block so far"),
    (
        HTTPChannel,
        "_networkProducer",
        f"{HTTP} ChannelBase.network_producer: what HTTPChannel pauses and resumes reading with",
    ),
    (
        HTTPChannel,
        "_waitingForTransport",
        f"{HTTP} ChannelBase.waiting_for_transport: reading paused while the send buffer is full",
    ),
    (HTTPChannel, "_handlingRequest", f"{HTTP} ChannelBase.handling_request: a request is being answered"),
    (Request, "_disconnected", f"{HTTP} client_gone: the request's connection was lost"),
    (Klein, "_instance", f"{HTTP} bound_instance: the object a Klein app was reached through (schema.DeclaredKlein)"),
]
TWISTED = ("twisted.", "klein.")  # the modules whose private names are fenced

UPGRADE = (
    "Twisted changed {what}. Re-read it in Twisted's source and check {why}; "
    "adapt that module if needed, then record the new value in tests/test_twisted_private.py."
)


def source_hash(function) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


def defined(cls: type, name: str) -> bool:
    """A class attribute, or an instance attribute one of the class's methods sets."""
    if hasattr(cls, name):
        return True
    attribute = re.sub(r"^_[A-Za-z]+(__)", r"\1", name)  # the name as written in its class
    for base in cls.__mro__:
        if base.__module__.startswith(TWISTED) and re.search(
            rf"self\.{re.escape(attribute)}\s*(:[^=\n]+)?=", inspect.getsource(base)
        ):
            return True
    return False


@pytest.mark.parametrize(("cls", "name", "recorded", "why"), METHODS, ids=[f"{c.__name__}.{n}" for c, n, *_ in METHODS])
def test_an_overridden_or_called_private_method_is_unchanged(cls, name, recorded, why):
    assert callable(getattr(cls, name, None)), UPGRADE.format(what=f"{cls.__qualname__}.{name} (it is gone)", why=why)
    actual = source_hash(getattr(cls, name))
    assert actual == recorded, UPGRADE.format(
        what=f"the source of {cls.__module__}.{cls.__qualname__}.{name} (sha256 {actual}, recorded {recorded})",
        why=why,
    )


@pytest.mark.parametrize(("cls", "name", "why"), ATTRIBUTES, ids=[f"{c.__name__}.{n}" for c, n, _ in ATTRIBUTES])
def test_a_private_attribute_read_still_exists(cls, name, why):
    assert defined(cls, name), UPGRADE.format(what=f"{cls.__module__}.{cls.__qualname__}.{name} (it is gone)", why=why)


# -- nowhere else ------------------------------------------------------------------------------

PINNED = {name for _, name, *_ in METHODS + ATTRIBUTES}
ROOT = pathlib.Path(appliance.__file__).parent


def twisted_private_names(cls: type) -> set[str]:
    """The private names Twisted's classes in `cls`'s ancestry define (class or instance attributes)."""
    names = set()
    for base in cls.__mro__:
        if not base.__module__.startswith(TWISTED):
            continue
        names |= {k for k in vars(base) if k.startswith("_") and not k.startswith("__")}
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        names |= set(re.findall(r"self\.(_[A-Za-z]\w*)\s*(?::[^=\n]+)?=", source))
        names |= {f"_{base.__name__}{n}" for n in re.findall(r"self\.(__[A-Za-z]\w*[A-Za-z0-9])\s*=", source)}
    return {n for n in names if not n.startswith("__")}


def on_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and ast.unparse(node.value) in ("self", "super()")


def private_uses(path: pathlib.Path) -> list[str]:
    """Where a module uses a private name of Twisted: on a Twisted subclass (self._x, super()._x,
    or a method overriding one), or a pinned name on another object (tcp._tempDataLen)."""
    tree = ast.parse(path.read_text())
    name = path.relative_to(ROOT.parent).with_suffix("").parts
    # a module without classes is not imported (appliance/__main__.py runs the daemon)
    classes = any(isinstance(n, ast.ClassDef) for n in ast.walk(tree))
    module = importlib.import_module(".".join(name)) if classes else None
    where = path.relative_to(ROOT.parent)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in PINNED and not on_self(node):  # self: see below
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    for klass in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        cls = getattr(module, klass.name, None)
        names = twisted_private_names(cls) if isinstance(cls, type) else set()
        for node in ast.walk(klass):
            if isinstance(node, ast.Attribute) and node.attr in names and (on_self(node) or node.attr not in PINNED):
                found.append(f"{where}:{node.lineno}: {klass.name}: {ast.unparse(node)}")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names:
                found.append(f"{where}:{node.lineno}: {klass.name} overrides {node.name}")
    return found


def test_twisted_private_names_are_used_only_in_twisted_private_modules():
    modules = sorted(p for p in ROOT.rglob("*.py") if p.name != "twisted_private.py")
    found = [use for path in modules for use in private_uses(path)]
    assert not found, (
        "private Twisted names used outside a twisted_private.py (move each into the one beside it, "
        "behind a public name, and pin it in this test):\n" + "\n".join(found)
    )


DEFINES = re.compile(
    r"self\.(_[A-Za-z]\w*)\s*(?::[^=\n]+)?=(?!=)|def (_[A-Za-z]\w*)|^\s*(_[A-Za-z]\w*)\s*(?::[^=\n]+)?=(?!=)", re.M
)


def private_names_defined(paths) -> set[str]:
    """The private names the files define: set on self, assigned in a class or module, or def'd."""
    return {name for path in paths for match in DEFINES.findall(path.read_text()) for name in match if name}


def test_no_private_twisted_name_is_read_from_another_object():
    """`reactor._selectables`, `transport._tempDataLen`: a private name that Twisted (or Klein)
    defines and the appliance does not, read from an object that is not self (the
    subclass's uses are the test above's)."""
    modules = sorted(p for p in ROOT.rglob("*.py") if p.name != "twisted_private.py")
    twisted = private_names_defined(  # every module of Twisted and Klein but their own tests
        path
        for package in (twisted_package, klein_package)
        for path in pathlib.Path(package.__file__).parent.rglob("*.py")
        if "test" not in path.relative_to(pathlib.Path(package.__file__).parent).parts[:-1]
    )
    foreign = twisted - private_names_defined(ROOT.rglob("*.py"))
    found = [
        f"{path.relative_to(ROOT.parent)}:{node.lineno}: {ast.unparse(node)}"
        for path in modules
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr in foreign
        and ast.unparse(node.value) not in ("self", "cls", "super()")
    ]
    assert not found, (
        "private Twisted names read outside a twisted_private.py (move each into the one beside it, "
        "behind a public name, and pin it in this test):\n" + "\n".join(found)
    )


def test_every_twisted_private_module_uses_only_pinned_names():
    """A private name added to a twisted_private module must be pinned here too."""
    unpinned = []
    for path in sorted(ROOT.rglob("twisted_private.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "name", None)
            if isinstance(node, ast.Attribute | ast.FunctionDef) and name.startswith("_") and not name.startswith("__"):
                if name not in PINNED:
                    unpinned.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {name}")
    assert not unpinned, "pin these in METHODS or ATTRIBUTES:\n" + "\n".join(unpinned)
