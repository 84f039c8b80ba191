"""Client addresses against lists of networks (a profile's IP allow-list, the trusted
networks of the brute-force defence): one parse for every check."""

from __future__ import annotations

import ipaddress


def networks(cidrs) -> tuple:
    """Parsed networks; ValueError naming the first that is not one."""
    return tuple(ipaddress.ip_network(c.strip(), strict=False) for c in cidrs if c.strip())


def in_networks(address: str, nets: tuple) -> bool:
    """Whether `address` (an IPv4-mapped IPv6 one counts as its IPv4 address) is in one of `nets`."""
    if not nets:
        return False
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in nets)


IPV6_PREFIX = 64  # an IPv6 client is counted by its /64: one host is usually given a whole one


def client_key(address: str, ipv6_prefix: int = IPV6_PREFIX) -> str:
    """Who a client address is, for counting and banning: an IPv4 address itself (an
    IPv4-mapped IPv6 one as its IPv4 address); an IPv6 address as its network of
    `ipv6_prefix` bits ("2001:db8:1:2::/64"), since a host given a /64 has 2^64 fresh
    addresses to try from. A network given whole ("2001:db8:1:2::/64") is keyed the
    same way as an address in it; anything else (a name, a Unix socket) is itself."""
    text = address.split("%")[0].strip()
    try:
        if "/" in text:
            net = ipaddress.ip_network(text, strict=False)
            ip = net.network_address
        else:
            ip = ipaddress.ip_address(text)
    except ValueError:
        return address
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.version == 4 or ipv6_prefix >= 128:
        return str(ip)
    return str(ipaddress.ip_network(f"{ip}/{ipv6_prefix}", strict=False))
