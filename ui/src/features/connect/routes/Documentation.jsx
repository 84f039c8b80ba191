import { usePageTitle } from "../../../components/PageMeta.js";
import { FTP_PORT, SFTP_PORT } from "../../../config/brand.js";
import { useInformation } from "../api/getInformation.js";

function Command({ children }) {
  return (
    <pre className="command">
      <code>{children}</code>
    </pre>
  );
}

/** The connection values the page's examples use: this user's, as the server reports them. */
export function connectionValues(information, location = window.location) {
  const info = information || {};
  return {
    host: info.hostname || location.hostname,
    username: info.username || "USERNAME",
    sftpPort: info.sftp_port ?? SFTP_PORT,
    ftpPort: info.ftp_port ?? FTP_PORT,
    hostKeys: info.host_keys || [],
  };
}

/** How to move files with the usual clients, with this portal's host, ports and fingerprints. */
export function Documentation() {
  usePageTitle("Documentation");
  const { data, error } = useInformation();
  const { host, username, sftpPort, ftpPort, hostKeys } =
    connectionValues(data);
  const sftpFlag = sftpPort === 22 ? "" : ` -P ${sftpPort}`;
  const ftpHost = ftpPort === 21 ? host : `${host}:${ftpPort}`;
  return (
    <article className="card prose docs">
      <h1>Documentation</h1>
      <p>
        Besides this web page, you can move files with any SFTP or FTP client.
        Every way in shows the same folder and follows the same permissions.
      </p>
      {error ? (
        <p className="error" role="alert">
          The connection details could not be loaded: the examples show the
          standard ports.
        </p>
      ) : null}

      <section aria-labelledby="docs-details">
        <h2 id="docs-details">Your connection details</h2>
        <dl className="details" data-testid="docs-details">
          <dt>Host</dt>
          <dd>
            <code>{host}</code>
          </dd>
          <dt>Username</dt>
          <dd>
            <code>{username}</code>
          </dd>
          <dt>Password</dt>
          <dd>
            Your portal password: the one you sign in here with. There is no
            separate password for SFTP or FTP.
          </dd>
          <dt>SFTP port</dt>
          <dd>
            <code data-testid="docs-sftp-port">{sftpPort}</code>
          </dd>
          <dt>FTP port</dt>
          <dd>
            <code data-testid="docs-ftp-port">{ftpPort}</code> (FTPS: explicit
            TLS, <code>AUTH TLS</code>, on the same port)
          </dd>
          {hostKeys.length ? <dt>Host key fingerprints</dt> : null}
          {hostKeys.map((key) => (
            <dd key={`${key.type}-${key.fingerprint}`}>
              <code className="fingerprint">
                {key.type} {key.fingerprint}
              </code>
            </dd>
          ))}
        </dl>
        <p>
          The first time an SFTP client connects, it shows the server's host key
          fingerprint and asks whether to trust it. Compare it with the
          fingerprints above: if none matches, do not connect, and tell your
          administrator.
        </p>
      </section>

      <section aria-labelledby="docs-openssh">
        <h2 id="docs-openssh">OpenSSH: sftp and scp</h2>
        <p>On Linux, macOS and Windows 10 or later, in a terminal:</p>
        <Command>{`sftp${sftpFlag} ${username}@${host}`}</Command>
        <p>
          Then <code>put report.pdf</code>, <code>get report.pdf</code>,{" "}
          <code>ls</code>, <code>cd</code>, <code>mkdir</code>;{" "}
          <code>put -r folder</code> sends a whole folder. To copy in one
          command:
        </p>
        <Command>
          {`scp${sftpFlag} report.pdf ${username}@${host}:/
scp${sftpFlag} ${username}@${host}:/report.pdf .`}
        </Command>
      </section>

      <section aria-labelledby="docs-filezilla">
        <h2 id="docs-filezilla">FileZilla</h2>
        <p>
          In the Site Manager, make a new site: Protocol{" "}
          <strong>SFTP - SSH File Transfer Protocol</strong>, Host{" "}
          <code>{host}</code>, Port <code>{sftpPort}</code>, Logon Type{" "}
          <strong>Normal</strong>, User <code>{username}</code> and your portal
          password. For FTP instead: Protocol <strong>FTP</strong>, Port{" "}
          <code>{ftpPort}</code>, Encryption{" "}
          <strong>Require explicit FTP over TLS</strong>.
        </p>
      </section>

      <section aria-labelledby="docs-winscp">
        <h2 id="docs-winscp">WinSCP</h2>
        <p>
          New Site: File protocol <strong>SFTP</strong>, Host name{" "}
          <code>{host}</code>, Port number <code>{sftpPort}</code>, User name{" "}
          <code>{username}</code> and your portal password; Login. When WinSCP
          asks whether to trust the host key, compare its SHA-256 fingerprint
          with the ones above. For FTP: File protocol <strong>FTP</strong>,
          Encryption <strong>TLS/SSL Explicit encryption</strong>, Port number{" "}
          <code>{ftpPort}</code>.
        </p>
      </section>

      <section aria-labelledby="docs-ftp">
        <h2 id="docs-ftp">FTP and FTPS: lftp and curl</h2>
        <p>
          FTP sends your password in clear text unless the client turns on TLS
          first (FTPS): ask for it, as below.
        </p>
        <Command>
          {`lftp -p ${ftpPort} -u ${username} -e 'set ftp:ssl-force true; set ftp:ssl-protect-data true' ${host}`}
        </Command>
        <p>
          In lftp, <code>mirror -R folder</code> uploads a folder and{" "}
          <code>mirror folder</code> downloads one. With curl:
        </p>
        <Command>
          {`curl --ssl-reqd -u ${username} -T report.pdf ftp://${ftpHost}/
curl --ssl-reqd -u ${username} ftp://${ftpHost}/report.pdf -o report.pdf
curl --ssl-reqd -u ${username} ftp://${ftpHost}/`}
        </Command>
        <p>
          If the portal uses a self-signed certificate, the client must be told
          to trust it (ask your administrator for it).
        </p>
      </section>

      <section aria-labelledby="docs-rclone">
        <h2 id="docs-rclone">rclone</h2>
        <p>Make a remote once, then copy or sync folders with it:</p>
        <Command>
          {`rclone config create portal sftp host=${host} port=${sftpPort} user=${username} shell_type=none ask_password=true
rclone copy ./outbox portal:/inbox --progress
rclone sync portal:/reports ./reports`}
        </Command>
        <p>
          rclone asks for your portal password each time. To keep it in
          rclone&apos;s configuration instead, run <code>rclone config</code>,
          edit the remote and enter it there (rclone stores it obscured).
        </p>
      </section>

      <section aria-labelledby="docs-uploads">
        <h2 id="docs-uploads">Uploads are all or nothing</h2>
        <p>
          Whatever the client, an upload is written under a hidden temporary
          name and appears under its real name only once it is complete. An
          upload that is cut off leaves no half file behind: others never pick
          up a partial file, and you simply send it again.
        </p>
      </section>

      <section aria-labelledby="docs-browser">
        <h2 id="docs-browser">In the browser</h2>
        <p>
          In the <strong>Fileviewer</strong>, drop files or whole folders on the
          page, or use <strong>Upload files</strong> and{" "}
          <strong>Upload a folder</strong>. Large uploads are sent in pieces and
          are resumable: if the connection drops, they carry on from where they
          stopped; after closing the page, choose the same file again in the
          same folder and the upload continues instead of starting over.
          Downloads are saved by the browser itself, however large the file.
        </p>
      </section>

      <section aria-labelledby="docs-shares">
        <h2 id="docs-shares">Share links</h2>
        <p>
          In the <strong>Fileviewer</strong>, <strong>Share</strong> makes a
          link to a file or folder for people without an account: choose when it
          expires, an optional password and download limit, or make a folder a{" "}
          <strong>drop box</strong> that only takes uploads. The link is shown
          once, and can be mailed to recipients. <strong>Shared links</strong>{" "}
          lists your links with their downloads, and revokes one at once.
        </p>
      </section>
    </article>
  );
}
