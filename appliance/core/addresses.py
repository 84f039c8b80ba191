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
