#!/usr/bin/env python3
"""The listing of a big folder over FTP, by the CPU its server spends: the product with
its C module (appliance/storage/local/_fast.c), the product without it, and vsftpd.

    sudo bench/listing_cpu.py [--entries 50000] [--rounds 15] [--appliance PATH --package PATH]

`LIST` on all three and `MLSD` on the product (vsftpd has none) of a folder of
--entries empty files, with ftplib, after two untimed rounds; each round takes the
cases in turn, the first one rotating. For each command: the CPU time (user and
system, in clock ticks) of the server's processes over it, every thread and every
session process included, and its wall time from the command to its 226 (the
median, and the least: the round the least disturbed). On a machine whose CPUs other
work shares, the wall times move with that work; the CPU times much less. The product without the C module is a copy of the package (--package)
without the built module, run by the same command with PYTHONPATH at the copy: tree.py then does the
work with os.lstat, name by name. Needs root, as bench/run's vsftpd does. Figures:
bench/README.md, "The C listing module against vsftpd"."""

from __future__ import annotations

import argparse
import contextlib
import ftplib
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from time import perf_counter

sys.dont_write_bytecode = True  # keep bench/ free of __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parent))

from product import APPLIANCE, REPO_ROOT, Product  # noqa: E402
from smallfiles import SmallVsftpd  # noqa: E402
from support import LOOPBACK, BenchError, Ports, Workspace, one_run_at_a_time  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


class ProductWithout(Product):
    """The product run from `package_root`, a copy of the package without the C module."""

    def __init__(self, workspace: Workspace, ports: Ports, executable: Path, package_root: Path):
        super().__init__(workspace, ports, executable)
        self.package_root = package_root

    def _environment(self) -> dict:
        return {**super()._environment(), "PYTHONPATH": str(self.package_root)}


def without_c_module(package: Path, folder: Path) -> Path:
    """A copy of `package` (the appliance folder) in `folder`, without any built C module."""
    shutil.copytree(package, folder / "appliance", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    return folder


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of `pid` and of every process descended from it."""
    total, todo = 0.0, [pid]
    while todo:
        process = todo.pop()
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
            for thread in os.listdir(f"/proc/{process}/task"):
                todo += [int(child) for child in Path(f"/proc/{process}/task/{thread}/children").read_text().split()]
    return total


def listing(login, command: str, pid: int, entries: int) -> tuple[float, float]:
    """(CPU seconds of the server, wall seconds) of `command` in the folder `big`."""
    with ftplib.FTP() as ftp:
        ftp.connect(LOOPBACK, login.port, timeout=120)
        ftp.login(login.username, login.password)
        ftp.cwd("big")
        lines: list[str] = []
        cpu, started = cpu_seconds(pid), perf_counter()
        ftp.retrlines(command, lines.append)
        wall, cpu = perf_counter() - started, cpu_seconds(pid) - cpu
    listed = sum(1 for line in lines if "entry-" in line)
    if listed != entries:
        raise BenchError(f"{command} listed {listed} entries, not {entries}")
    return cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=50_000, help="files in the listed folder (default: 50000)")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds; the median is reported (default: 15)")
    parser.add_argument("--appliance", type=Path, default=APPLIANCE, help="the product's command (default: .venv's)")
    parser.add_argument("--package", type=Path, default=REPO_ROOT / "appliance",
                        help="the package --appliance runs, copied without its C module (default: this checkout's)")  # fmt: skip
    args = parser.parse_args()
    with one_run_at_a_time(), contextlib.ExitStack() as stack:
        ports = Ports()
        copy = without_c_module(args.package, Path(stack.enter_context(tempfile.TemporaryDirectory())))
        servers = {
            "with C": stack.enter_context(Product(stack.enter_context(Workspace(64 << 20)), ports, args.appliance)),
            "without C": stack.enter_context(
                ProductWithout(stack.enter_context(Workspace(64 << 20)), ports, args.appliance, copy)
            ),
            "vsftpd": stack.enter_context(SmallVsftpd(stack.enter_context(Workspace(64 << 20)), ports)),
        }
        sides = {}  # name -> (its FTP sign-in, its server)
        for name, server in servers.items():
            login = (server.start() if name == "vsftpd" else server.start()["ftp"]).login
            sides[name] = (login, server)
            if name == "vsftpd":
                big = server.files / "big"
                big.mkdir()
            else:  # the product decides where its admin's home is: the first entry goes in over FTP
                with ftplib.FTP() as ftp:
                    ftp.connect(LOOPBACK, login.port, timeout=60)
                    ftp.login(login.username, login.password)
                    ftp.mkd("big")
                    ftp.storbinary("STOR big/entry-000000.txt", open(os.devnull, "rb"))
                big = server.stored_path("entry-000000.txt").parent
            for i in range(args.entries):
                (big / f"entry-{i:06d}.txt").touch()
        cases = [
            ("with C", "LIST"),
            ("without C", "LIST"),
            ("vsftpd", "LIST"),
            ("with C", "MLSD"),
            ("without C", "MLSD"),
        ]
        results: dict[tuple[str, str], list[tuple[float, float]]] = {case: [] for case in cases}
        for round_ in range(-2, args.rounds):  # two untimed rounds first
            turn = round_ % len(cases)
            for name, command in cases[turn:] + cases[:turn]:
                login, server = sides[name]
                pid = server.child.pid if name == "vsftpd" else server.pid
                figure = listing(login, command, pid, args.entries)
                if round_ >= 0:
                    results[(name, command)].append(figure)
        print(f"{args.entries:,} entries, median of {args.rounds} rounds; load average now "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
        reference = results[("vsftpd", "LIST")]
        cpu_ref = statistics.median(cpu for cpu, _ in reference)
        wall_ref = statistics.median(wall for _, wall in reference)
        print(f"{'server':10} {'command':8} {'CPU ms':>7} {'wall ms':>8} {'least':>6} {'CPU / vsftpd':>13} "
              f"{'wall / vsftpd':>14} {'least / vsftpd':>15}")  # fmt: skip
        least_ref = min(wall for _, wall in reference)
        for (name, command), figures in results.items():
            cpu = statistics.median(cpu for cpu, _ in figures)
            wall = statistics.median(wall for _, wall in figures)
            least = min(wall for _, wall in figures)
            print(f"{name:10} {command:8} {cpu * 1000:7.0f} {wall * 1000:8.0f} {least * 1000:6.0f} {cpu / cpu_ref:13.2f} "
                  f"{wall / wall_ref:14.2f} {least / least_ref:15.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
