import { Dialog } from "../../components/dialog.jsx";
import { DOCUMENTATION_URL } from "../../config/routes.js";

/** Connection details: the welcome dialog and the 'How do I connect?' chip show the same. */
export function ConnectDialog({ information, onClose }) {
  const info = information || {};
  return (
    <Dialog title="How do I connect?" onClose={onClose} actions={<button onClick={onClose}>Close</button>}>
      {info.source ? (
        <p className="positive">You have been assigned to the source {info.source}.</p>
      ) : (
        <p className="error">You have no source configured. Ask your administrator to assign one.</p>
      )}
      <dl>
        <dt>Host</dt>
        <dd>{info.hostname}</dd>
        <dt>Username</dt>
        <dd>{info.username}</dd>
        <dt>Password</dt>
        <dd>Your portal password (the one you sign in here with).</dd>
        <dt>SFTP port</dt>
        <dd>{info.sftp_port ?? 22}</dd>
        <dt>FTP port</dt>
        <dd>{info.ftp_port ?? 21}</dd>
        {(info.host_keys || []).length ? <dt>Host key fingerprints</dt> : null}
        {(info.host_keys || []).map((key) => (
          <dd key={key.type}>
            <code>{key.type} {key.fingerprint}</code>
          </dd>
        ))}
      </dl>
      <p>
        <a href={DOCUMENTATION_URL}>Documentation</a>
      </p>
    </Dialog>
  );
}
