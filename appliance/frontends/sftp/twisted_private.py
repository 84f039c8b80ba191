"""Every use of a private name of Twisted Conch by the SFTP front end, in one place
(those of Twisted's TCP transport are in frontends/twisted_private.py).

Written against Twisted 26.10. tests/test_twisted_private.py pins each
name used here (and the source of each method overridden): after an upgrade, a
failure there names what to re-read in Twisted before trusting this module again.
The rest of the SFTP front end uses only public names and these.

- `UserAuthServer`: SSHUserAuthServer ends a sign-in in its private
  `_cbFinishedAuth` (success) and `_ebBadAuth` (failure) with no public hook; they
  call `signed_in` and `refused` here, which subclasses override.
- `FileTransferServerBase`: FileTransferServer answers through private helpers
  (`_sendStatus`, `_cbStatus`, `_cbExtended`), reports every failed request through
  `_ebStatus` and opens handles in `_cbOpenFile`/`_cbOpenDirectory`; here they are
  public names (`send_status`, `status_ok`, `extended_reply`, `request_failed`,
  `file_opened`, `directory_opened`).
- key exchange: SSHTransportBase keeps its state in `_keyExchangeState` (against
  `_KEY_EXCHANGE_NONE`) and queues what may not be sent meanwhile in
  `_blockedByKeyExchange` (after `_allowedKeyExchangeMessageType`), which a
  transport that seals its own packets must honour as conch's sendPacket does.
- `SSHConnection._log`, the connection's logger (its namespace is the class's).
"""

from __future__ import annotations

from twisted.conch.ssh import userauth
from twisted.conch.ssh.filetransfer import FileTransferServer

# -- sign-in --------------------------------------------------------------------------


class UserAuthServer(userauth.SSHUserAuthServer):
    """SSHUserAuthServer with public hooks where a sign-in ends."""

    def signed_in(self) -> None:
        """The sign-in succeeded and conch has started the next service."""

    def refused(self, reason):
        """A sign-in failed: the Failure for conch to answer (say, with
        UnauthorizedLogin), or None when it was answered here."""
        return reason

    def _cbFinishedAuth(self, result):
        super()._cbFinishedAuth(result)
        self.signed_in()

    def _ebBadAuth(self, reason):
        reason = self.refused(reason)
        if reason is None:
            return None
        return super()._ebBadAuth(reason)


# -- the SFTP server ----------------------------------------------------------------------


class FileTransferServerBase(FileTransferServer):
    """FileTransferServer with its reply helpers and handle hooks under public names."""

    def send_status(self, request_id: bytes, code: int, message: bytes) -> None:
        """Send an FXP_STATUS reply."""
        self._sendStatus(request_id, code, message)

    def status_ok(self, result, request_id: bytes, message: bytes = b"request succeeded"):
        """A callback: FX_OK for the request."""
        return self._cbStatus(result, request_id, message)

    def extended_reply(self, data: bytes, request_id: bytes):
        """A callback: FXP_EXTENDED_REPLY with `data`."""
        return self._cbExtended(data, request_id)

    def request_failed(self, reason, request_id: bytes, message: bytes = b"request failed"):
        """The reply to a failed request (conch's: its errno mapping, logged)."""
        return FileTransferServer._ebStatus(self, reason, request_id, message)

    def file_opened(self, file, request_id: bytes):
        """An OPEN succeeded: conch's keeps the handle and replies FXP_HANDLE."""
        return FileTransferServer._cbOpenFile(self, file, request_id)

    def directory_opened(self, directory, request_id: bytes):
        """An OPENDIR succeeded: conch's keeps the handle and replies FXP_HANDLE."""
        return FileTransferServer._cbOpenDirectory(self, directory, request_id)

    def _ebStatus(self, reason, requestId, msg=b"request failed"):
        return self.request_failed(reason, requestId, msg)

    def _cbOpenFile(self, fileObj, requestId):
        return self.file_opened(fileObj, requestId)

    def _cbOpenDirectory(self, dirObj, requestId):
        return self.directory_opened(dirObj, requestId)


# -- the SSH transport ----------------------------------------------------------------------


def key_exchange_idle(ssh) -> bool:
    """Whether no key exchange is under way on this SSH transport."""
    return ssh._keyExchangeState == ssh._KEY_EXCHANGE_NONE


def held_for_key_exchange(ssh, message_type: int, parts) -> bool:
    """During a key exchange, queue a message that may not be sent then, as conch's
    sendPacket does (sent once it ends); True if it was queued."""
    if ssh._keyExchangeState != ssh._KEY_EXCHANGE_NONE and not ssh._allowedKeyExchangeMessageType(message_type):
        ssh._blockedByKeyExchange.append((message_type, b"".join(parts)))
        return True
    return False


def connection_log(conn):
    """An SSHConnection's logger."""
    return conn._log
