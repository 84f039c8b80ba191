"""Outbound mail (password resets, invitations) over SMTP per [smtp], on the
reactor with twisted.mail. Sending happens in the background and is retried;
a message that still cannot be delivered is logged as an error, never dropped
silently."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from twisted.internet import task
from twisted.logger import Logger
from twisted.mail import smtp

from ..threads import spawn

log = Logger()

RETRY_DELAYS = (5, 30, 120, 600)  # seconds between attempts


class Mailer:
    def __init__(self, settings, reactor):
        self._settings = settings
        self._reactor = reactor
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
        """Queue a message; the caller's request does not wait for the SMTP server."""
        spawn(self._deliver(to, subject, self.message(to, subject, text, html)), f"mail to {to}")

    async def _deliver(self, to: str, subject: str, data: bytes) -> None:
        settings = self._settings
        for attempt, delay in enumerate((0, *RETRY_DELAYS)):
            if delay:
                await task.deferLater(self._reactor, delay, lambda: None)
            try:
                await smtp.sendmail(
                    settings.host,
                    settings.sender,
                    [to],
                    data,
                    port=settings.port,
                    reactor=self._reactor,
                    username=settings.username.encode() if settings.username else None,
                    password=settings.password.encode() if settings.password else None,
                    requireAuthentication=bool(settings.username),
                    requireTransportSecurity=settings.starttls,
                )
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
