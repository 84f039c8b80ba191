"""The control socket: what the host's own command line asks the running daemon
(`appliance bans list`, `appliance bans lift ADDRESS`). Bans live in the daemon's
memory, so the command line cannot read them from the database.

A UNIX socket in the data dir (`control.sock`, mode 0600): only the daemon's own
account and root reach it, which is who may act for the operator on the host. One
JSON object a line each way: {"command": "bans"} -> {"bans": [...]};
{"command": "lift", "address": A} -> {"lifted": n}; anything else -> {"error": why}.
"""

from __future__ import annotations

import json

from twisted.internet import defer
from twisted.internet.protocol import Factory
from twisted.logger import Logger
from twisted.protocols.basic import LineOnlyReceiver

from ..errors import ApplianceError

log = Logger()

SOCKET_NAME = "control.sock"
MAX_LINE = 4096


class ControlProtocol(LineOnlyReceiver):
    delimiter = b"\n"
    MAX_LENGTH = MAX_LINE

    def __init__(self, auth):
        self.auth = auth

    def lineReceived(self, line: bytes) -> None:
        defer.Deferred.fromCoroutine(self._answer(line))

    async def _answer(self, line: bytes) -> None:
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not an object")
            reply = await self._do(request)
        except (ValueError, UnicodeDecodeError) as e:
            reply = {"error": f"not a request ({e})"}
        except ApplianceError as e:
            reply = {"error": e.message}
        except Exception:  # noqa: BLE001 - the host's command gets an answer, the log the traceback
            log.failure("control socket request failed")
            reply = {"error": "Internal error: the request was not carried out (see the daemon's log)."}
        self.sendLine(json.dumps(reply).encode())

    async def _do(self, request: dict) -> dict:
        command = request.get("command")
        if command == "bans":
            return {
                "bans": [
                    {"address": b.address, "until": b.until, "kind": b.kind, "why": b.why, "offences": b.offences}
                    for b in self.auth.bans_on_host()
                ]
            }
        if command == "lift":
            address = request.get("address")
            if not isinstance(address, str) or not address.strip():
                return {"error": "Name the address whose bans to lift."}
            return {"lifted": await self.auth.lift_on_host(address.strip())}
        return {"error": f"unknown command {command!r}: bans or lift"}

    def lineLengthExceeded(self, line):
        self.transport.loseConnection()


def control_factory(services) -> Factory:
    factory = Factory.forProtocol(lambda: ControlProtocol(services.auth))
    factory.noisy = False  # the daemon's log names its listeners once, itself (service.py)
    return factory
