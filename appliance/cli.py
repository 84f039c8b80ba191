"""The `appliance` command: setup, serve, check, reset-password.

Every failure a person can cause (setup twice, an unwritable data dir, a port in
use, a bad endpoint, a bad config key) is one line on stderr saying what and
where, and a non-zero exit; never a traceback.
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import shlex
import signal
import sys

from . import __version__, config
from .errors import ApplianceError, ConfigError

CONFIG_ENV = "APPLIANCE_CONFIG"


def _load_settings(args) -> config.Settings:
    path = args.config or os.environ.get(CONFIG_ENV) or None
    environ = {k: v for k, v in os.environ.items() if k != CONFIG_ENV}
    settings = config.load(path, environ)
    if args.data_dir:
        settings.server.data_dir = args.data_dir
    return settings


def _serve_command(args) -> str:
    """The command that serves what this one worked on: the --config and --data-dir it was given."""
    given = (("config", args.config), ("data-dir", args.data_dir))
    return "appliance serve" + "".join(f" --{flag} {shlex.quote(value)}" for flag, value in given if value)


def _read_password(args, prompt: str = "Password: ") -> str:
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise ApplianceError("no password on standard input")
        return password
    if not sys.stdin.isatty():
        raise ApplianceError("give the password with --password-stdin (standard input is not a terminal)")
    first = getpass.getpass(prompt)
    if first != getpass.getpass("Repeat the password: "):
        raise ApplianceError("the two passwords differ")
    return first


def _run_core(settings: config.Settings, work) -> int:
    """Build the core on a reactor, run `work(core)` (a coroutine function), stop."""
    from twisted.internet import defer, task

    from .core import build_core
    from .service import storage_backends

    outcome: dict[str, object] = {}

    async def main(reactor):
        core = None
        try:
            core = build_core(settings, reactor, storage_backends)
            outcome["value"] = await work(core)
        except ApplianceError as e:
            outcome["error"] = e
        finally:
            if core is not None:
                core.threads.stop()
                core.store.close()

    try:
        task.react(lambda reactor: defer.Deferred.fromCoroutine(main(reactor)))
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return 0


def _react(work):
    """Run `work()` (a coroutine function) on the reactor until it ends; its result."""
    from twisted.internet import defer, task

    outcome: dict[str, object] = {}

    async def main(reactor):
        outcome["value"] = await work()

    try:
        task.react(lambda reactor: defer.Deferred.fromCoroutine(main(reactor)))
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    return outcome["value"]


def cmd_setup(args) -> int:
    settings = _load_settings(args)
    password = _read_password(args)

    async def work(core):
        created = await core.organisations.initialize(args.org, args.username, args.email, password)
        print(
            f"Set up organisation {args.org!r} (subdomain {created.subdomain}) with admin {args.username!r}.\n"
            f"Data dir: {settings.data_path}\nStart the daemon with: {_serve_command(args)}"
        )

    return _run_core(settings, work)


def cmd_reset_password(args) -> int:
    settings = _load_settings(args)
    if not settings.data_path.joinpath("appliance.db").exists():
        raise ConfigError(f"data dir {settings.data_path}: no database (run `appliance setup` first)")
    password = _read_password(args, "New password: ")

    async def work(core):
        await core.profiles.set_password(args.username, password, by="the appliance command")
        print(f"Password of {args.username!r} changed.")

    return _run_core(settings, work)


def cmd_check(args) -> int:
    from twisted.internet import reactor

    from .core.datadir import DataDir
    from .service import listen_problems, parse_endpoint
    from .systemd import unit_problems

    problems: list[str] = []
    try:
        settings = _load_settings(args)
    except ConfigError as e:
        print(f"appliance: {e}", file=sys.stderr)
        return 1
    data_dir = DataDir(settings.data_path)
    to_try = []
    for what in ("http", "https", "sftp", "ftp", "ops"):
        for description in getattr(settings.listen, what):
            if description.startswith("systemd:"):
                if "LISTEN_FDS" not in os.environ:
                    continue  # the sockets reach ExecStart only (not ExecStartPre): checked when serving
            try:
                endpoint = parse_endpoint(reactor, description, what)
            except ConfigError as e:
                problems.append(str(e))
            else:
                if not description.startswith("systemd:"):
                    to_try.append((endpoint, description, what.upper()))
    if to_try and not _served(data_dir):  # a serving daemon holds its ports
        problems.extend(_react(lambda: listen_problems(to_try)))
    problems.extend(data_dir.problems())
    problems.extend(unit_problems())  # on an installed system: the daemon's unit failing or restarting
    for root in settings.sources.local_roots:
        if not os.path.isdir(root):
            problems.append(f"[sources] local_roots: {root} is not a folder")
    for line in settings.retired_in_use():
        print(f"warning: {line}", file=sys.stderr)
    if problems:
        for problem in problems:
            print(f"problem: {problem}", file=sys.stderr)
        return 1
    print(f"ok: config {settings.source_file or '(built-in defaults)'}, data dir {settings.data_path}")
    return 0


def _served(data_dir) -> bool:
    """Whether a daemon holds this data dir now (False when it cannot be looked at)."""
    try:
        return data_dir.path.is_dir() and data_dir.in_use()
    except OSError:
        return False


# Twisted's own lines as a port opens and closes: "<factory> starting on <port>" (a UNIX
# socket's: on '<path>') and "(TCP Port <port> Closed)". The service names each listener
# itself ("FTP listening on ..."), and every passive FTP data connection would otherwise
# add two lines.
_PORT_CHATTER = re.compile(r".+ starting on (?:\d+|'[^']*')|\((?:TCP|UDP|UNIX) Port \S+ Closed\)")


def _not_port_chatter(event):
    from twisted.logger import PredicateResult

    if event.get("log_namespace") == "log_legacy":
        message = event.get("message") or ()
        if len(message) == 1 and _PORT_CHATTER.fullmatch(str(message[0])):
            return PredicateResult.no
    return PredicateResult.maybe


def _log_observer(stream):
    """One line per event at info and above; the protocol libraries' per-connection
    chatter only from warnings up, and none of Twisted's port openings and closings."""
    from twisted.logger import LogLevel, LogLevelFilterPredicate

    from .frontends.sftp import LIBRARY_LOG_NAMESPACES

    levels = LogLevelFilterPredicate(defaultLogLevel=LogLevel.info)
    quiet = ("twisted.conch", "twisted.internet.protocol", "twisted.web.server", "twisted.protocols.ftp")
    for namespace in quiet + LIBRARY_LOG_NAMESPACES:
        levels.setLogLevelForNamespace(namespace, LogLevel.warn)
    return _LineObserver(stream, [levels, _not_port_chatter])


# a format that is one whole field ("{audit}"): the line is that field's text
_ONE_FIELD = re.compile(r"\{(\w+)\}")


class _LineObserver:
    """The lines Twisted's `textFileLogObserver` writes ("TIME [namespace#level] text"),
    behind filtering predicates, made with less Python for the lines the daemon writes
    per transferred file (one audit line each, made whole by core/audit.py): their
    format is one field, written as it is, and the timestamp is made once a second.
    Every other event is formatted by Twisted's own formatter."""

    def __init__(self, stream, predicates):
        from twisted.logger import PredicateResult

        self._stream = stream
        self._predicates = predicates
        self._no = PredicateResult.no
        self._yes = PredicateResult.yes
        self._second: int | None = None
        self._stamp = "-"
        self._fields: dict[str, str | None] = {}  # format -> its one field, or None

    def _time(self, when: float | None) -> str:
        from twisted.logger import formatTime

        if when is None:
            return "-"
        second = int(when // 1)
        if second != self._second:
            self._second, self._stamp = second, formatTime(second)
        return self._stamp

    def _wanted(self, event) -> bool:
        for predicate in self._predicates:
            said = predicate(event)
            if said is self._no:
                return False
            if said is self._yes:
                return True
        return True

    def __call__(self, event) -> None:
        if not self._wanted(event):
            return
        text = self._plain(event)
        if text is None:
            from twisted.logger import formatEventAsClassicLogText

            text = formatEventAsClassicLogText(event, formatTime=self._time)
            if not text:
                return
        self._stream.write(text)
        self._stream.flush()

    def _plain(self, event) -> str | None:
        """The line of an event whose format is one whole field holding text, without
        a traceback to add; None for any other (Twisted formats those)."""
        form = event.get("log_format")
        if not isinstance(form, str) or "log_failure" in event:
            return None
        field = self._fields.get(form, "")
        if field == "":
            match = _ONE_FIELD.fullmatch(form)
            field = self._fields[form] = match.group(1) if match else None
        value = event.get(field) if field else None
        if not isinstance(value, str) or not value:
            return None
        system = event.get("log_system")
        if system is None:
            level = event.get("log_level")
            system = f"{event.get('log_namespace', '-')}#{level.name if level is not None else '-'}"
        elif not isinstance(system, str):
            return None
        return f"{self._time(event.get('log_time'))} [{system}] {value.replace(chr(10), chr(10) + chr(9))}\n"


def freeze_start_up_heap() -> None:
    """Take what the daemon holds once it is built (its modules, services, settings:
    some 80,000 objects) out of the garbage collector's full passes, which otherwise go
    over all of them now and then and hold the GIL meanwhile: 31 and 87 ms on the
    reactor during listings of a folder of 50,000 files, whose entries survive long
    enough to set a full pass off (bench/README.md); 0.2 ms frozen. What start-up left
    behind is collected first. The metric `appliance_gc_frozen_objects` says how many."""
    import gc

    gc.collect()
    gc.freeze()


def cmd_serve(args) -> int:
    from twisted.internet import reactor
    from twisted.logger import Logger, globalLogBeginner

    from . import systemd
    from .service import build_service

    log = Logger("appliance")

    settings = _load_settings(args)
    for what in ("http", "https", "sftp", "ftp", "ops"):
        override = getattr(args, what)
        if override:
            setattr(settings.listen, what, override)
    daemon = build_service(settings, reactor)
    globalLogBeginner.beginLoggingTo([_log_observer(sys.stdout)], redirectStandardIO=False)
    exit_code = {"code": 0}

    async def start():
        daemon.startService()
        reactor.addSystemEventTrigger("before", "shutdown", daemon.stopService)
        try:
            await daemon.ready()
        except ConfigError as e:
            for line in str(e).splitlines():
                print(f"appliance: {line}", file=sys.stderr, flush=True)
            exit_code["code"] = 1
            reactor.stop()
            return
        systemd.notify("READY=1\nSTATUS=Serving " + ", ".join(listener.description for listener in daemon.listeners))
        await daemon.announce()
        systemd.start_watchdog(reactor)

    def reload_tls():
        try:
            daemon.core.tls.reload()
            log.info("reloaded the TLS certificate from {path}", path=str(daemon.core.tls.certificate))
        except ConfigError as e:
            log.error("SIGHUP: {error}; keeping the certificate in use", error=str(e))

    # SIGHUP: re-read the TLS certificate (logs go to stdout: nothing to reopen)
    signal.signal(signal.SIGHUP, lambda *_: reactor.callFromThread(reload_tls))

    from twisted.internet import defer

    # before anything listens: the collection holds the process for ~0.1 s, and a client
    # that came meanwhile would wait, or find its place still held by one that had left
    freeze_start_up_heap()
    reactor.callWhenRunning(lambda: defer.Deferred.fromCoroutine(start()))
    reactor.run()
    return exit_code["code"]


def cmd_backup(args) -> int:
    from .core.backup import backup
    from .core.datadir import DataDir

    settings = _load_settings(args)
    names = backup(DataDir(settings.data_path), args.file)
    print(f"Backed up {', '.join(names)} from {settings.data_path} to {args.file}.")
    print("The files of local sources are not in it: back up their folders too.")
    return 0


def cmd_restore(args) -> int:
    from .core.backup import restore
    from .core.datadir import DataDir

    settings = _load_settings(args)
    restore(args.file, DataDir(settings.data_path), force=args.force)
    print(f"Restored {args.file} into {settings.data_path}. Start the daemon with: {_serve_command(args)}")
    return 0


def _ask_daemon(settings, request: dict) -> dict:
    """One request to the running daemon through its control socket (frontends/control.py)."""
    import json
    import socket

    from .frontends.control import SOCKET_NAME

    path = os.path.join(settings.data_path, SOCKET_NAME)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(path)
            sock.sendall(json.dumps(request).encode() + b"\n")
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
    except FileNotFoundError:
        raise ApplianceError(
            f"the appliance is not running on {settings.data_path} (no {path}): bans live in the running daemon's "
            "memory, and a stopped one has none (give --data-dir or --config if it serves another data dir)"
        ) from None
    except PermissionError:
        raise ApplianceError(f"cannot reach {path}: run this as root or as the appliance's own account") from None
    except OSError as e:
        raise ApplianceError(f"cannot reach the running appliance at {path}: {e.strerror or e}") from None
    reply = json.loads(answer or b"{}")
    if "error" in reply or not reply:
        raise ApplianceError(reply.get("error") or "the appliance closed the connection without an answer")
    return reply


def cmd_bans(args) -> int:
    import time

    settings = _load_settings(args)
    if args.action == "lift":
        if not args.address:
            raise ApplianceError("name the address: appliance bans lift ADDRESS")
        lifted = _ask_daemon(settings, {"command": "lift", "address": args.address})["lifted"]
        if not lifted:
            print(f"No ban on {args.address} was in force.")
        else:
            print(f"Lifted {lifted} ban{'s' if lifted > 1 else ''} on {args.address}.")
        return 0
    bans = _ask_daemon(settings, {"command": "bans"})["bans"]
    if not bans:
        print("No ban is in force.")
    for ban in bans:
        minutes = max(1, round((ban["until"] - time.time()) / 60))
        print(f"{ban['address']}\t{minutes} more minute{'s' if minutes > 1 else ''}\t{ban['why']}")
    return 0


def cmd_config_reference(args) -> int:
    from .config_reference import reference

    print(reference(), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="appliance", description="The file-transfer portal appliance: SFTP, FTP and a web console."
    )
    parser.add_argument("--version", action="version", version=f"appliance {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sub):
        sub.add_argument("--config", metavar="FILE", help=f"TOML config file (default: ${CONFIG_ENV} or built-in)")
        sub.add_argument("--data-dir", metavar="DIR", help="data dir (overrides [server] data_dir)")

    setup = commands.add_parser("setup", help="first run: create the first organisation and its admin")
    common(setup)
    setup.add_argument("--org", required=True, help="organisation name")
    setup.add_argument("--username", required=True)
    setup.add_argument("--email", required=True)
    setup.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    setup.set_defaults(handler=cmd_setup)

    serve = commands.add_parser("serve", help="run the daemon in the foreground")
    common(serve)
    for what in ("http", "https", "sftp", "ftp", "ops"):
        serve.add_argument(
            f"--{what}", action="append", metavar="EP", help=f"{what.upper()} listener (Twisted endpoint; repeatable)"
        )
    serve.set_defaults(handler=cmd_serve)

    check = commands.add_parser("check", help="validate the config and the data dir")
    common(check)
    check.set_defaults(handler=cmd_check)

    reset = commands.add_parser("reset-password", help="set a profile's password")
    common(reset)
    reset.add_argument("username")
    reset.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    reset.set_defaults(handler=cmd_reset_password)

    backup = commands.add_parser("backup", help="copy the database and keys to FILE (safe while serving)")
    common(backup)
    backup.add_argument("file", help="the .tar.gz to write")
    backup.set_defaults(handler=cmd_backup)

    restore = commands.add_parser("restore", help="restore a backup into a data dir no daemon is serving")
    common(restore)
    restore.add_argument("file", help="a .tar.gz made by `appliance backup`")
    restore.add_argument("--force", action="store_true", help="replace an existing database")
    restore.set_defaults(handler=cmd_restore)

    bans = commands.add_parser("bans", help="list the bans in force, or lift those on an address (the daemon runs)")
    common(bans)
    bans.add_argument("action", choices=["list", "lift"])
    bans.add_argument("address", nargs="?", help="with lift: the IP address (an IPv6 one lifts its network's)")
    bans.set_defaults(handler=cmd_bans)

    reference = commands.add_parser("config-reference", help="print every config key, its default and meaning")
    reference.set_defaults(handler=cmd_config_reference)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except ApplianceError as e:
        print(f"appliance: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
