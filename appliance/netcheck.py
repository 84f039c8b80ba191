"""Which hosts the appliance may connect to on an admin's behalf (mailboxes,
remote sources, their sign-in providers, the outbound mail server): never
link-local or cloud-metadata addresses, loopback only when the config allows it.

The check is made for each connection, on the address that connection then
uses: `Destinations.address` looks the name up, checks every address it
resolves to and returns one, and the connector connects to exactly that
address (keeping the name for TLS SNI, certificate checks and the Host
header). A name checked once and looked up again later by someone else (DNS
rebinding: public when checked, 127.0.0.1 or the metadata address when
connecting) never reaches a refused address. Every connector calls it: IMAP
(mailboxes.py), remote SFTP (remote_sftp.py), SMTP (mail/outbound.py), and
botocore and urllib through `pin_botocore` and `http_handlers` below (S3,
STS, the OpenID provider's token endpoint).
"""

from __future__ import annotations

import functools
import http.client
import ipaddress
import socket
import urllib.request
from collections.abc import Callable

from .errors import Invalid, Unavailable
from .text import control_characters

METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}

Resolver = Callable[[str, int], list[str]]  # (host name, port) -> its addresses, blocking


def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's answer (getaddrinfo; blocking)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def refusal(address: str, allow_loopback: bool) -> str | None:
    """Why this address may not be used, or None."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip in METADATA:
        return "it is a cloud metadata address"
    if ip.is_link_local:
        return "it is a link-local address"
    if ip.is_unspecified or ip.is_multicast or ip.is_reserved:
        return "it is not a usable host address"
    if ip.is_loopback and not allow_loopback:
        return "it is this appliance itself (loopback); an operator may allow that in the config"
    return None


def inward(address: str) -> bool:
    """Whether an address is on the appliance's own side (private, loopback, shared or
    otherwise not global): where what answers, or not, must not be told apart."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return not ip.is_global


def _literal(host: str) -> str | None:
    """The host as an IP address when it is one (no lookup needed), else None."""
    bare = host.strip("[]")
    try:
        ipaddress.ip_address(bare.split("%")[0])
    except ValueError:
        return None
    return bare


class Destinations:
    """Resolves and checks the hosts outbound connections go to. Built once by the
    composition root; `resolver` is replaceable (tests use a stand-in)."""

    def __init__(self, resolver: Resolver = system_resolver):
        self._resolver = resolver

    def allowed(self, host: str, port: int, allow_loopback: bool) -> list[str]:
        """Look `host` up now (blocking: call on a pool thread) and return its addresses,
        refusing the host (Invalid) when any of them may not be used."""
        host = host.strip()
        if not host or len(host) > 253 or control_characters(host) or any(c.isspace() for c in host):
            raise Invalid(f"{host!r} is not a host name.", {"host": ["Enter a host name or address."]})
        literal = _literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                addresses = self._resolver(host, port)
            except (OSError, UnicodeError) as e:
                raise Unavailable(f"Cannot resolve the host {host}: {getattr(e, 'strerror', None) or e}.") from None
            if not addresses:
                raise Unavailable(f"Cannot resolve the host {host}: it has no address.")
        for address in addresses:
            why = refusal(address, allow_loopback)
            if why:
                raise Invalid(f"{host} ({address}) may not be used: {why}.", {"host": [f"Not allowed: {why}."]})
        return addresses

    def address(self, host: str, port: int, allow_loopback: bool) -> str:
        """The address ONE connection to `host` goes to, looked up and checked now (blocking).
        Call it for every connection and connect to what it returns, never to the name."""
        return self.allowed(host, port, allow_loopback)[0]


# -- connectors that resolve on their own, made to connect to the checked address ------------------


class _CheckedHTTP(http.client.HTTPConnection):
    """An http.client connection whose socket goes to the address checked for it; the
    name stays the Host header (and, for HTTPS, the SNI and certificate name)."""

    def __init__(self, *args, destinations: Destinations, allow_loopback: bool, **kwargs):
        super().__init__(*args, **kwargs)

        def connect(address, *rest, **more):
            host, port = address
            return socket.create_connection((destinations.address(host, port, allow_loopback), port), *rest, **more)

        self._create_connection = connect


class _CheckedHTTPS(_CheckedHTTP, http.client.HTTPSConnection):
    pass


class _CheckedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, checked: dict):
        super().__init__()
        self._checked = checked

    def http_open(self, req):
        return self.do_open(functools.partial(_CheckedHTTP, **self._checked), req)


class _CheckedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, checked: dict):
        super().__init__()
        self._checked = checked

    def https_open(self, req):
        return self.do_open(functools.partial(_CheckedHTTPS, **self._checked), req, context=self._context)


def http_handlers(destinations: Destinations, allow_loopback: bool) -> list[urllib.request.BaseHandler]:
    """urllib handlers (for build_opener) whose every connection goes to a checked address."""
    checked = {"destinations": destinations, "allow_loopback": allow_loopback}
    return [_CheckedHTTPHandler(checked), _CheckedHTTPSHandler(checked)]


def pin_botocore(client, destinations: Destinations, allow_loopback: bool):
    """Make a botocore client's every new connection go to an address checked for it
    (blocking import; call on a thread). urllib3 connects to `_dns_host` (the URL's host,
    also its `host`, used after connecting for SNI, the certificate check and the Host
    header): it is the checked address only while the socket is being made. Reaches into
    botocore's URLLib3Session (`_endpoint.http_session`, its pool classes): pinned by
    tests/core/test_rebinding.py."""
    from botocore.awsrequest import (
        AWSHTTPConnection,
        AWSHTTPConnectionPool,
        AWSHTTPSConnection,
        AWSHTTPSConnectionPool,
    )

    def checked(base):
        class Checked(base):
            def _new_conn(self):
                name = self._dns_host
                self._dns_host = destinations.address(name, self.port, allow_loopback)
                try:
                    return super()._new_conn()
                finally:
                    self._dns_host = name

        return Checked

    class CheckedHTTPPool(AWSHTTPConnectionPool):
        ConnectionCls = checked(AWSHTTPConnection)

    class CheckedHTTPSPool(AWSHTTPSConnectionPool):
        ConnectionCls = checked(AWSHTTPSConnection)

    session = client._endpoint.http_session
    pools = {"http": CheckedHTTPPool, "https": CheckedHTTPSPool}
    session._pool_classes_by_scheme = pools  # for proxy managers made later
    session._manager.pool_classes_by_scheme = pools
    return client
