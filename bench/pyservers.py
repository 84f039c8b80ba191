"""The Python reference servers, run by bench/run in their own venv (.venv-bench,
bench/requirements.txt) as `python pyservers.py asyncssh|pyftpdlib ...`, each in the
foreground on a loopback port until SIGTERM, with the library's defaults:

- asyncssh: an SFTP server (no shell) serving one folder as its root, to any
  user name whose key is in the given authorized_keys file; its default algorithms.
- pyftpdlib: an FTP server (FTPHandler, no TLS) serving one folder to one
  user with a password from $PYFTPDLIB_PASSWORD, passive ports in the given range.

It imports neither the product nor the rest of bench/ (other venv)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys


def serve_asyncssh(args: argparse.Namespace) -> None:
    import asyncssh

    folder = args.folder

    class FolderSFTPServer(asyncssh.SFTPServer):
        def __init__(self, chan):
            super().__init__(chan, chroot=folder)

    async def main() -> None:
        server = await asyncssh.listen(
            args.host,
            args.port,
            server_host_keys=[args.host_key],
            authorized_client_keys=args.authorized_keys,
            sftp_factory=FolderSFTPServer,
            allow_scp=False,
        )
        print(f"asyncssh {asyncssh.__version__} SFTP on {args.host}:{args.port}, root {folder}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        server.close()
        await server.wait_closed()

    asyncio.run(main())


def serve_pyftpdlib(args: argparse.Namespace) -> None:
    import pyftpdlib
    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.handlers import FTPHandler
    from pyftpdlib.servers import FTPServer

    password = os.environ["PYFTPDLIB_PASSWORD"]  # not in argv (visible in ps)
    authorizer = DummyAuthorizer()
    authorizer.add_user(args.user, password, args.folder, perm="elradfmwMT")
    handler = FTPHandler
    handler.authorizer = authorizer
    handler.passive_ports = range(args.passive_low, args.passive_high + 1)
    server = FTPServer((args.host, args.port), handler)
    print(f"pyftpdlib {pyftpdlib.__ver__} FTP on {args.host}:{args.port}, root {args.folder}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: server.close_all())
    server.serve_forever()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="pyservers.py")
    parser.add_argument("server", choices=("asyncssh", "pyftpdlib"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--folder", required=True)
    parser.add_argument("--host-key", help="asyncssh: the host key file")
    parser.add_argument("--authorized-keys", help="asyncssh: the clients' public keys")
    parser.add_argument("--user", help="pyftpdlib: the user (its password in $PYFTPDLIB_PASSWORD)")
    parser.add_argument("--passive-low", type=int, help="pyftpdlib: the first passive port")
    parser.add_argument("--passive-high", type=int, help="pyftpdlib: the last passive port")
    args = parser.parse_args(argv)
    if args.server == "asyncssh":
        serve_asyncssh(args)
    else:
        serve_pyftpdlib(args)


if __name__ == "__main__":
    main(sys.argv[1:])
