"""Outbound mail (password resets, invitations) over SMTP per [smtp], on the
reactor with twisted.mail. Sending happens in the background and is retried;
a message that still cannot be delivered is logged as an error, never dropped
silently.

Nothing stored reaches the SMTP dialogue or the headers unchecked: an address or
subject holding a control character (a CR LF would start another SMTP command or
header) is not sent, with an error in the log; [smtp] settings are refused with one
when the config loads; AUTH credentials travel base64-encoded. Each connection goes
to the address netcheck checked for it (the name kept for STARTTLS)."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from io import BytesIO

from twisted.internet import defer, task
from twisted.logger import Logger
from twisted.mail import smtp

from ..core.netcheck import Destinations
from ..core.validation import control_characters
from ..threads import spawn

log = Logger()

RETRY_DELAYS = (5, 30, 120, 600)  # seconds between attempts


class Mailer:
    def __init__(self, settings, reactor, threads, destinations: Destinations):
        self._settings = settings
        self._reactor = reactor
        self._threads = threads
        self._destinations = destinations
        self.sent = 0  # delivered messages, for tests and metrics

    def message(self, to: str, subject: str, text: str, html: str) -> bytes:
        message = EmailMessage()
        message["From"] = self._settings.sender
        message["To"] = to
        message["Subject"] = subject
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = make_msgid(domain=self._settings.sender.rpartition("@")[2] or "appliance")
        message.set_content(text)
        message.add_alternative(html, subtype="html")
        return message.as_bytes()

    def send(self, to: str, subject: str, text: str, html: str) -> None:
        """Queue a message; the caller's request does not wait for the SMTP server. An address
        or subject that would break out of its SMTP command or header is not sent (logged)."""
        unsafe = [what for what, value in (("address", to), ("subject", subject)) if control_characters(value)]
        if unsafe:
            log.error(
                "mail to {to!r} not sent: its {what} holds a control character, which would reach the mail server "
                "as another command or header; correct the stored {what}",
                to=to, what=unsafe[0],
            )  # fmt: skip
            return
        spawn(self._deliver(to, subject, self.message(to, subject, text, html)), f"mail to {to}")

    async def _sendmail(self, to: str, data: bytes) -> None:
        """twisted.mail's sendmail, connected to the address checked for this connection."""
        settings = self._settings
        # the operator's own mail server: loopback allowed (the default is localhost); metadata never
        address = await self._threads.work(self._destinations.address, settings.host, settings.port, True)
        done: defer.Deferred = defer.Deferred()
        factory = smtp.ESMTPSenderFactory(
            settings.username.encode() if settings.username else None,
            settings.password.encode() if settings.password else None,
            settings.sender,
            [to],
            BytesIO(data),
            done,
            heloFallback=True,
            requireAuthentication=bool(settings.username),
            requireTransportSecurity=settings.starttls,
            hostname=settings.host,  # for the STARTTLS certificate check
        )
        connector = self._reactor.connectTCP(address, settings.port, factory)
        try:
            await done
        except BaseException:
            factory.sendFinished = True  # as sendmail's cancel: no further attempt of the factory's own
            connector.disconnect()
            raise

    async def _deliver(self, to: str, subject: str, data: bytes) -> None:
        for attempt, delay in enumerate((0, *RETRY_DELAYS)):
            if delay:
                await task.deferLater(self._reactor, delay, lambda: None)
            try:
                await self._sendmail(to, data)
            except Exception as e:  # noqa: BLE001 - every failure is retried, then reported
                log.warn(
                    "mail to {to} ({subject}) failed on attempt {n}: {error}",
                    to=to, subject=subject, n=attempt + 1, error=str(e) or e.__class__.__name__,
                )  # fmt: skip
                continue
            self.sent += 1
            log.info("mail to {to} sent: {subject}", to=to, subject=subject)
            return
        log.error("mail to {to} ({subject}) could not be delivered; check [smtp] in the config", to=to, subject=subject)
