import { useEffect, useState } from "react";
import { useParams, useSearchParams } from "react-router";
import { errorText } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { formatBytes, formatTime } from "../../../lib/format.js";
import { forgetAccess, storedAccess } from "../api/access.js";
import { useSharedLink } from "../api/getSharedLink.js";
import { sharedDownloadUrl } from "../api/sharedDownloadUrl.js";
import { DropBox } from "../components/DropBox.jsx";
import { SharedFolder } from "../components/SharedFolder.jsx";
import { UnlockForm } from "../components/UnlockForm.jsx";

function Terms({ link }) {
  return (
    <p className="help">
      {link.shared_by ? `Shared by ${link.shared_by}. ` : ""}
      The link works until {formatTime(link.expires_at)}
      {link.downloads_left !== null && link.downloads_left !== undefined
        ? `, for ${link.downloads_left} more download${link.downloads_left === 1 ? "" : "s"}`
        : ""}
      .
    </p>
  );
}

/** /auth/shared?token=…: what a share link opens, without sign-in. */
export function SharedLink() {
  const [params] = useSearchParams();
  const { token: pathToken } = useParams();
  const token = params.get("token") || pathToken || "";
  const [access, setAccess] = useState(() =>
    token ? storedAccess(token) : null,
  );
  const { data: link, error, mutate } = useSharedLink(token, access);
  usePageTitle(link && link.name ? `Shared: ${link.name}` : "Shared files");
  const accessExpired = Boolean(error && error.status === 401 && access);
  useEffect(() => {
    if (accessExpired) forgetAccess(token); // the unlocked access ran out
  }, [accessExpired, token]);

  let body;
  if (!token) {
    body = (
      <p>Open the whole link you were sent to see what was shared with you.</p>
    );
  } else if (accessExpired) {
    body = (
      <>
        <p className="error">{errorText(error)}</p>
        <UnlockForm token={token} onUnlocked={setAccess} />
      </>
    );
  } else if (error) {
    body = (
      <p className="error" role="alert">
        {errorText(error)}
      </p>
    );
  } else if (!link) {
    body = <p>Opening the link…</p>;
  } else if (link.password_required && !link.unlocked) {
    body = <UnlockForm token={token} onUnlocked={setAccess} />;
  } else if (link.upload_only) {
    body = (
      <>
        <p>
          {link.shared_by || "Someone"} asks you to upload files into{" "}
          <strong>{link.name}</strong>.
        </p>
        <DropBox token={token} access={access} />
        <Terms link={link} />
      </>
    );
  } else if (link.kind === "folder") {
    body = (
      <>
        <SharedFolder token={token} access={access} name={link.name} />
        <Terms link={link} />
      </>
    );
  } else {
    body = (
      <>
        <p className="shared-file">
          <strong>{link.name}</strong>{" "}
          <span className="help">{formatBytes(link.size)}</span>
        </p>
        <div className="actions start">
          <a
            className="button"
            href={sharedDownloadUrl(token, undefined, access)}
            download={link.name}
            onClick={() => setTimeout(() => mutate(), 1500)}
          >
            Download
          </a>
        </div>
        <Terms link={link} />
      </>
    );
  }
  return (
    <div className="card wide-card">
      <h1>{link && link.upload_only ? "Upload files" : "Shared files"}</h1>
      {body}
    </div>
  );
}
