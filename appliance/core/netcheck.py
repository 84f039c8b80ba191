"""Which hosts the appliance may connect to on an admin's behalf (mailboxes,
remote sources): never link-local or cloud-metadata addresses, loopback only
when the config allows it. Checked when saved and again when connecting, on
the addresses the name resolves to, and the connection goes to the checked
address (no DNS rebinding in between)."""

from __future__ import annotations

import ipaddress
import socket

from ..errors import Invalid, Unavailable

METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


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


def resolve_allowed(host: str, port: int, allow_loopback: bool) -> list[str]:
    """Resolve `host` (blocking: call on the work pool) and return the allowed addresses."""
    host = host.strip()
    if not host or len(host) > 253 or any(c.isspace() or ord(c) < 32 for c in host):
        raise Invalid(f"{host!r} is not a host name.", {"host": ["Enter a host name or address."]})
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise Unavailable(f"Cannot resolve the host {host}: {getattr(e, 'strerror', None) or e}.") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    for address in addresses:
        why = refusal(address, allow_loopback)
        if why:
            raise Invalid(f"{host} ({address}) may not be used: {why}.", {"host": [f"Not allowed: {why}."]})
    return addresses
