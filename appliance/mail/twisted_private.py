"""Every use of a private name of Twisted by the mailbox poller, in one place.

Written against Twisted 26.10. tests/test_twisted_private.py pins each name used
here (and the source of each method overridden): after an upgrade, a failure there
names what to re-read in Twisted before trusting this module again. The rest of
appliance/mail uses only Twisted's public names and these.

- `QuietByeClient`: IMAP4Client hands every untagged response that is not a reply
  to a command to its private `_extraInfo`, which logs "Unhandled unsolicited
  response" for each it does not know; the server's BYE at LOGOUT is one, so every
  poll would log a line. It is overridden to leave BYE out.
"""

from __future__ import annotations

from twisted.mail import imap4


class QuietByeClient(imap4.IMAP4Client):
    """IMAP4Client that expects the server's BYE instead of logging it as unsolicited."""

    def _extraInfo(self, lines):
        super()._extraInfo([line for line in lines if not (line and line[0] == b"BYE")])
