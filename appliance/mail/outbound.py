"""Outbound mail (password resets, invitations) over SMTP, on the reactor with
twisted.mail, to the mail server the appliance's settings name at each attempt
([smtp] in the config file, or the operator's in the console). Sending happens in
the background and is retried; a message that still cannot be delivered is logged
as an error, never dropped silently.

Nothing stored reaches the SMTP dialogue or the headers unchecked: an address or
subject holding a control character (a CR LF would start another SMTP command or
header) is not sent, with an error in the log; [smtp] settings holding one are
refused when the config loads or the console saves them; AUTH credentials travel
base64-encoded. Each connection goes to the address netcheck checked for it (the
name kept for STARTTLS)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from io import BytesIO
from typing import Protocol

from twisted.internet import defer, task
from twisted.logger import Logger
from twisted.mail import smtp

from ..config import SmtpSettings
from ..deferreds import spawn
from ..netcheck import Destinations
from ..text import control_characters

log = Logger()

RETRY_DELAYS = (5, 30, 120, 600)  # seconds between attempts
WAIT_FOR_SERVER = 20  # seconds a request waits for the mail server's answer (send_now)


@dataclass
class MailState:
    """What outbound mail last did, for the operator: the last delivery, the last failed
    attempt, and how many messages are still waiting to go. Times are ISO 8601 (UTC)."""

    last_success_at: str | None = None
    last_success_to: str | None = None
    last_error_at: str | None = None
    last_error: str | None = None
    last_error_to: str | None = None
    pending: int = 0  # messages queued or being retried


def failure_text(error: BaseException) -> str:
    """A failed attempt in words (twisted.mail's errors say what the server answered)."""
    if isinstance(error, defer.TimeoutError):
        return f"the mail server did not answer within {WAIT_FOR_SERVER} seconds"
    return (str(error) or error.__class__.__name__).strip()


class MailSettings(Protocol):
    """Where mail goes, asked again for every message and attempt (core.appliance_settings)."""

    def smtp(self) -> SmtpSettings:
        """The effective [smtp] settings, without the password."""

    def smtp_password(self) -> str:
        """The mail server's password, opened."""


class Mailer:
    def __init__(self, settings: MailSettings, reactor, threads, destinations: Destinations):
        self._settings = settings
        self._reactor = reactor
        self._threads = threads
        self._destinations = destinations
        self.sent = 0  # delivered messages, for tests and metrics
        self.state = MailState()

    def status(self) -> dict:
        """The state of outbound mail and where it goes ([smtp]; never the password)."""
        settings = self._settings.smtp()
        return {
            **asdict(self.state),
            "host": settings.host,
            "port": settings.port,
            "starttls": settings.starttls,
            "sender": settings.sender,
            "authenticated": bool(settings.username),
        }

    def _now(self) -> str:
        return datetime.fromtimestamp(self._reactor.seconds(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _succeeded(self, to: str) -> None:
        self.sent += 1
        self.state.last_success_at, self.state.last_success_to = self._now(), to

    def _failed(self, to: str, error: str) -> None:
        self.state.last_error_at, self.state.last_error, self.state.last_error_to = self._now(), error, to

    def message(self, to: str, subject: str, text: str, html: str) -> bytes:
        sender = self._settings.smtp().sender
        message = EmailMessage()
        message["From"] = sender
        message["To"] = to
        message["Subject"] = subject
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or "appliance")
        message.set_content(text)
        message.add_alternative(html, subtype="html")
        return message.as_bytes()

    def _unsafe(self, to: str, subject: str) -> str | None:
        """Why a message may not be sent (an address or subject that would break out of its
        SMTP command or header), logged; or None."""
        unsafe = [what for what, value in (("address", to), ("subject", subject)) if control_characters(value)]
        if not unsafe:
            return None
        log.error(
            "mail to {to!r} not sent: its {what} holds a control character, which would reach the mail server "
            "as another command or header; correct the stored {what}",
            to=to, what=unsafe[0],
        )  # fmt: skip
        return f"its {unsafe[0]} holds a control character"

    def send(self, to: str, subject: str, text: str, html: str) -> None:
        """Queue a message; the caller's request does not wait for the SMTP server. An address
        or subject that would break out of its SMTP command or header is not sent (logged)."""
        if self._unsafe(to, subject):
            return
        spawn(self._deliver(to, subject, self.message(to, subject, text, html)), f"mail to {to}")

    async def send_now(self, to: str, subject: str, text: str, html: str, *, retry: bool = True) -> str | None:
        """Try one delivery while the caller waits (at most WAIT_FOR_SERVER seconds): None
        when the mail server took the message, else why not, in words. After a failure the
        message is retried in the background like `send`'s when `retry`."""
        unsafe = self._unsafe(to, subject)
        if unsafe:
            return unsafe
        data = self.message(to, subject, text, html)
        try:
            await defer.Deferred.fromCoroutine(self._sendmail(to, data)).addTimeout(WAIT_FOR_SERVER, self._reactor)
        except Exception as e:  # noqa: BLE001 - told to the caller, then retried
            error = failure_text(e)
            self._failed(to, error)
            log.warn("mail to {to} ({subject}) failed: {error}", to=to, subject=subject, error=error)
            if retry:
                spawn(self._deliver(to, subject, data, RETRY_DELAYS), f"mail to {to}")
            return error
        self._succeeded(to)
        log.info("mail to {to} sent: {subject}", to=to, subject=subject)
        return None

    async def _sendmail(self, to: str, data: bytes) -> None:
        """twisted.mail's sendmail, connected to the address checked for this connection, with
        the mail server's settings as they are now (the console may have changed them)."""
        settings = self._settings.smtp()
        password = self._settings.smtp_password() if settings.username else ""
        # the operator's own mail server: loopback allowed (the default is localhost); metadata never
        address = await self._threads.work(self._destinations.address, settings.host, settings.port, True)
        done: defer.Deferred = defer.Deferred()
        factory = smtp.ESMTPSenderFactory(
            settings.username.encode() if settings.username else None,
            password.encode() if password else None,
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

    async def _deliver(self, to: str, subject: str, data: bytes, delays: tuple = (0, *RETRY_DELAYS)) -> None:
        self.state.pending += 1
        try:
            for attempt, delay in enumerate(delays):
                if delay:
                    await task.deferLater(self._reactor, delay, lambda: None)
                try:
                    await self._sendmail(to, data)
                except Exception as e:  # noqa: BLE001 - every failure is retried, then reported
                    self._failed(to, failure_text(e))
                    log.warn(
                        "mail to {to} ({subject}) failed on attempt {n}: {error}",
                        to=to, subject=subject, n=attempt + 1, error=failure_text(e),
                    )  # fmt: skip
                    continue
                self._succeeded(to)
                log.info("mail to {to} sent: {subject}", to=to, subject=subject)
                return
            log.error(
                "mail to {to} ({subject}) could not be delivered; check outbound mail (the operator's settings "
                "in the console, or [smtp] in the config)",
                to=to,
                subject=subject,
            )
        finally:
            self.state.pending -= 1
