import {
  DOCUMENTATION_URL,
  FTP_PORT,
  SFTP_PORT,
} from "../../../config/brand.js";

/** What a user needs to connect with an SFTP or FTP client (welcome and connect dialogs). */
export function ConnectionDetails({ information }) {
  const info = information || {};
  const keys = info.host_keys || [];
  return (
    <>
      <dl className="details">
        <dt>Host</dt>
        <dd>
          <code>{info.hostname || window.location.hostname}</code>
        </dd>
        <dt>Username</dt>
        <dd>
          <code>{info.username}</code>
        </dd>
        <dt>Password</dt>
        <dd>
          The password is your portal password: the one you sign in here with.
        </dd>
        <dt>Ports</dt>
        <dd>
          {info.sftp_port ?? SFTP_PORT} (SFTP), {info.ftp_port ?? FTP_PORT}{" "}
          (FTP)
        </dd>
        {keys.length ? <dt>Host key fingerprints</dt> : null}
        {keys.map((key) => (
          <dd key={`${key.type}-${key.fingerprint}`}>
            <code className="fingerprint">
              {key.type} {key.fingerprint}
            </code>
          </dd>
        ))}
      </dl>
      <p>
        <a href={DOCUMENTATION_URL} target="_blank" rel="noreferrer">
          Documentation
        </a>
      </p>
    </>
  );
}
