"""pyOpenSSL's private names behind appliance/core/openssl_private.py: what they do on
real handshakes (in memory, pyOpenSSL on both sides), and the probe that stops the
daemon at start when an installed pyOpenSSL lacks them."""

from __future__ import annotations

import types

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL

from appliance.core import openssl_private
from appliance.core.openssl_private import session_reused, set_groups
from appliance.core.tls import GROUPS, self_signed


@pytest.fixture(scope="module")
def material() -> tuple:
    certificate, key = self_signed("localhost")
    return x509.load_pem_x509_certificate(certificate), serialization.load_pem_private_key(key, password=None)


def server(material) -> SSL.Context:
    """A server context that keeps sessions by id (TLS 1.2, no tickets), as FTPS's does."""
    context = SSL.Context(SSL.TLS_METHOD)
    context.use_certificate(material[0])
    context.use_privatekey(material[1])
    context.set_session_id(b"test")
    context.set_options(SSL.OP_NO_TICKET)
    return context


def handshake(server_context, client_context, session=None) -> tuple[SSL.Connection, SSL.Connection]:
    """A TLS handshake between two in-memory connections; returns (server, client)."""
    server, client = SSL.Connection(server_context, None), SSL.Connection(client_context, None)
    server.set_accept_state()
    client.set_connect_state()
    if session is not None:
        client.set_session(session)
    for _ in range(10):
        for side, peer in ((client, server), (server, client)):
            try:
                side.do_handshake()
            except SSL.WantReadError:
                pass
            try:
                peer.bio_write(side.bio_read(65536))
            except SSL.WantReadError:
                pass
    assert server.get_cipher_name() and client.get_cipher_name(), "the handshake did not end"
    return server, client


def test_a_second_handshake_with_the_first_ones_session_is_seen_as_resumed(material):
    server_context, client_context = server(material), SSL.Context(SSL.TLS_METHOD)
    client_context.set_max_proto_version(SSL.TLS1_2_VERSION)
    first_server, first_client = handshake(server_context, client_context)
    second_server, _ = handshake(server_context, client_context, first_client.get_session())

    assert not session_reused(first_server)
    assert session_reused(second_server)


def test_a_client_without_one_of_the_groups_set_cannot_connect(material):
    restricted, other_group = server(material), SSL.Context(SSL.TLS_METHOD)
    assert set_groups(restricted, GROUPS)
    assert set_groups(other_group, b"secp521r1")
    handshake(server(material), other_group)  # without the restriction, it can

    with pytest.raises(SSL.Error):
        handshake(restricted, other_group)


def test_groups_openssl_does_not_know_are_refused():
    assert not set_groups(SSL.Context(SSL.TLS_METHOD), b"no-such-group")


def test_the_installed_pyopenssl_has_every_name_the_module_uses():
    assert openssl_private._missing() == []


def test_a_pyopenssl_without_one_of_them_is_named(monkeypatch):
    monkeypatch.setattr(openssl_private, "_lib", types.SimpleNamespace(SSL_CTX_set1_curves_list=None))
    assert openssl_private._missing() == ["OpenSSL._util.lib.SSL_session_reused"]
