"""The reference servers: OpenSSH's sshd (internal-sftp) and vsftpd (plain, and
with explicit TLS), each on a loopback high port with its own configuration, keys
and folders inside the workspace. Outside it they need only /run/sshd and three
system users: `benchftp` and `benchftps` (vsftpd's) and `benchssh` (sshd's for
password sign-ins)."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import subprocess
from pathlib import Path

from clients import Endpoint, Login
from support import LOOPBACK, BenchError, Child, Ports, Workspace, package_version, run_checked

SSHD = "/usr/sbin/sshd"
VSFTPD = "/usr/sbin/vsftpd"
FTP_USER = "benchftp"
FTPS_USER = "benchftps"  # its own user too: the plain vsftpd's run must not change its password
SSH_USER = "benchssh"  # its own user: another run's vsftpd must not change this one's password
PASSIVE_PORTS = 20


class ReferenceServer(contextlib.AbstractContextManager):
    """A reference server for one protocol: `start()` configures and starts it
    and returns its endpoint; leaving the context stops it."""

    protocol: str

    def __init__(self, workspace: Workspace, ports: Ports):
        self.workspace = workspace
        self.ports = ports
        self.folder = workspace.folder(f"ref-{self.protocol}")  # configuration, keys, logs
        self.files = workspace.folder(f"ref-{self.protocol}-files", 0o755)  # what clients see
        self.child: Child | None = None
        self.user: SystemUser | None = None  # a system user it signs in, locked again at the end

    def __exit__(self, *exc) -> None:
        if self.child is not None:
            self.child.stop()
        self.cleanup()

    def cleanup(self) -> None:
        """Undo what start() did outside the workspace."""
        if self.user is not None:
            self.user.lock()

    def stored_path(self, name: str) -> Path:
        """Where an upload named `name` lands."""
        return self.files / name


class SystemUser:
    """A system user for a reference server (shell `nologin`, created when missing):
    a new random password each run, locked again when the run ends."""

    def __init__(self, name: str, comment: str):
        self.name = name
        self.comment = comment
        self.password: str | None = None

    def unlock(self) -> str:
        """Give the user a new password and return it; needs root."""
        if os.geteuid() != 0:
            raise BenchError(f"signing in the system user {self.name} needs root")
        try:
            pwd.getpwnam(self.name)
        except KeyError:
            run_checked(
                [
                    "useradd", "--system", "--no-create-home", "--home-dir", "/",
                    "--shell", "/usr/sbin/nologin", "--comment", self.comment, self.name,
                ],
                "useradd",
            )  # fmt: skip
        password = secrets.token_urlsafe(18)
        run_checked(["chpasswd"], "chpasswd", stdin_text=f"{self.name}:{password}\n")
        self.password = password
        return password

    def lock(self) -> None:
        # the account stays for the next run, but nobody can sign in with it
        if self.password is not None:
            subprocess.run(["passwd", "-q", "-l", self.name], capture_output=True)
            self.password = None


class OpenSshServer(ReferenceServer):
    """`sshd -D -e` with its own host key, serving internal-sftp in a workspace
    folder to the current user, who signs in with a generated key."""

    protocol = "sftp"
    password_logins = False  # else: `user_name` signs in with a password, checked against /etc/shadow
    user_name = SSH_USER

    def start(self) -> Endpoint:
        if self.password_logins:
            self.user = SystemUser(self.user_name, "bench/run SSH password reference")
        folder = self.folder
        host_key, client_key = folder / "ssh_host_ed25519_key", folder / "client_key"
        for key in (host_key, client_key):
            run_checked(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench", "-f", str(key)], "ssh-keygen")
        authorized_keys = folder / "authorized_keys"
        authorized_keys.write_text((folder / "client_key.pub").read_text())
        port = self.ports.one()
        config = folder / "sshd_config"
        if self.user is not None:
            login = Login(port, self.user_name, self.user.unlock())
        else:
            login = Login(port, pwd.getpwuid(os.geteuid()).pw_name, key_file=client_key)
        config.write_text(
            f"Port {port}\n"
            f"ListenAddress {LOOPBACK}\n"
            f"HostKey {host_key}\n"
            f"PidFile {folder / 'sshd.pid'}\n"
            "UsePAM no\n"
            "PermitRootLogin yes\n"
            f"AuthorizedKeysFile {authorized_keys}\n"
            "StrictModes no\n"
            f"PasswordAuthentication {'yes' if self.password_logins else 'no'}\n"
            "KbdInteractiveAuthentication no\n"
            "X11Forwarding no\n"
            "PrintMotd no\n"
            # the concurrency case signs many sessions in at once: the default 10:30:100
            # drops connections at random once 10 are still signing in
            "MaxStartups 1000\n"
            f"Subsystem sftp internal-sftp -d {self.files}\n"
        )
        try:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege-separation directory
        except OSError as e:
            raise BenchError(f"sshd needs /run/sshd: {e}") from None
        run_checked([SSHD, "-t", "-f", str(config)], "sshd rejects its configuration")
        self.child = Child("sshd", [SSHD, "-D", "-e", "-f", str(config)], folder / "sshd.log")
        self.child.wait_for_ports([port])
        version = package_version("openssh-server") or "?"
        return Endpoint("reference", self.protocol, f"OpenSSH internal-sftp {version}", login, self.stored_path)


class OpenSshPasswordServer(OpenSshServer):
    """The same sshd for the sign-in rate: `UsePAM no`, `PasswordAuthentication yes`,
    so sshd itself checks `benchssh`'s password against /etc/shadow (yescrypt on Debian 12)."""

    protocol = "logins"
    password_logins = True


class VsftpdServer(ReferenceServer):
    """vsftpd in the foreground, serving a workspace folder to a local system
    user (`benchftp`, created when missing) whose password is new each run and
    locked again afterwards."""

    protocol = "ftp"
    user_name = FTP_USER

    def start(self) -> Endpoint:
        if os.geteuid() != 0:
            raise BenchError("vsftpd needs root (it switches to the signed-in system user)")
        self.user = SystemUser(self.user_name, f"bench/run {self.protocol.upper()} reference")
        password = self.user.unlock()
        os.chown(self.files, pwd.getpwnam(self.user_name).pw_uid, -1)
        empty = self.workspace.folder(f"ref-{self.protocol}-empty", 0o755)  # secure_chroot_dir: empty, not writable
        port = self.ports.one()
        passive_low, passive_high = self.ports.span(PASSIVE_PORTS)
        config = self.folder / "vsftpd.conf"
        config.write_text(
            self.tls_config() + "listen=YES\n"
            "listen_ipv6=NO\n"
            f"listen_address={LOOPBACK}\n"
            f"listen_port={port}\n"
            "background=NO\n"
            "anonymous_enable=NO\n"
            "local_enable=YES\n"
            "write_enable=YES\n"
            "local_umask=022\n"
            f"local_root={self.files}\n"
            "pasv_enable=YES\n"
            f"pasv_min_port={passive_low}\n"
            f"pasv_max_port={passive_high}\n"
            "connect_from_port_20=NO\n"
            # containers allow neither its seccomp filter nor new namespaces
            "seccomp_sandbox=NO\n"
            "isolate=NO\n"
            "isolate_network=NO\n"
            # the user's shell is nologin, and Debian's `vsftpd` PAM service
            # requires a listed shell: `other` is plain common-auth
            "check_shell=NO\n"
            "pam_service_name=other\n"
            "userlist_enable=NO\n"
            f"secure_chroot_dir={empty}\n"
            "xferlog_enable=NO\n"
        )
        self.child = Child("vsftpd", [VSFTPD, str(config)], self.folder / "vsftpd.log")
        self.child.wait_for_ports([port])
        version = package_version("vsftpd") or "?"
        login = Login(port, self.user_name, password)
        return Endpoint("reference", self.protocol, f"vsftpd {version}", login, self.stored_path)

    def tls_config(self) -> str:
        """Configuration lines for TLS (none: plain FTP)."""
        return ""


class VsftpdTlsServer(VsftpdServer):
    """vsftpd with explicit FTPS (AUTH TLS) required for the sign-in and for every
    data connection, with its own self-signed certificate (RSA 2048), for its own
    system user `benchftps`."""

    protocol = "ftps"
    user_name = FTPS_USER

    def tls_config(self) -> str:
        cert, key = self.folder / "cert.pem", self.folder / "key.pem"
        run_checked(
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-subj", f"/CN={LOOPBACK}", "-keyout", str(key), "-out", str(cert),
            ],
            "openssl req (vsftpd's certificate)",
        )  # fmt: skip
        return (
            "ssl_enable=YES\n"
            f"rsa_cert_file={cert}\n"
            f"rsa_private_key_file={key}\n"
            "force_local_logins_ssl=YES\n"
            "force_local_data_ssl=YES\n"
            "ssl_sslv2=NO\n"
            "ssl_sslv3=NO\n"
            "ssl_tlsv1=YES\n"
            # vsftpd's default, spelled out: a data connection must resume the control
            # connection's TLS session (curl does; the product allows either)
            "require_ssl_reuse=YES\n"
            # vsftpd 3.0.3's own default list is DES-CBC3-SHA alone (TLS 1.2 and below)
            "ssl_ciphers=HIGH\n"
        )


REFERENCES = {"sftp": OpenSshServer, "ftp": VsftpdServer, "ftps": VsftpdTlsServer, "logins": OpenSshPasswordServer}
