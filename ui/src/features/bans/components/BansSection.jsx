import { useConfirm } from "../../../components/Dialog.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { formatTime } from "../../../lib/format.js";
import { useBans, useLiftBan } from "../api/bans.js";

/** One ban as a sentence: what was being guessed, what is refused, and until when. */
export function banText(ban) {
  const why =
    ban.why || `wrong passwords for ${(ban.usernames || []).join(", ")}`;
  const repeat = ban.offences > 1 ? ` (offence ${ban.offences})` : "";
  return `${why[0].toUpperCase()}${why.slice(1)}; until ${formatTime(ban.until, "—")}${repeat}`;
}

/** Bans earned guessing the organisation's usernames or share links; lifting those of an address. */
export function BansSection() {
  const notify = useAttemptNotify();
  const confirm = useConfirm();
  const lift = useLiftBan();
  const { data, error } = useBans();
  const bans = data ? data.results : [];

  async function unban(address) {
    const sure = await confirm({
      title: "Lift the ban",
      message: `Let ${address} try again now? Every ban on it shown here is lifted.`,
      confirm: "Lift the ban",
    });
    if (!sure) return;
    try {
      await lift(address);
      notify(`The ban on ${address} was lifted`, { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }

  return (
    <section className="card" data-testid="bans">
      <h2>Bans</h2>
      <p className="help">
        An address that keeps failing to sign in as one of your users, or to
        open one of your share links, is refused for a while: that user or link
        only, or every sign-in when it tried many names. Lift a ban when you
        know the address.
      </p>
      {error ? <p className="error">The bans could not be loaded.</p> : null}
      {data && !bans.length ? (
        <p className="help">No address is banned.</p>
      ) : null}
      {bans.length ? (
        <ul>
          {bans.map((ban) => (
            <li key={`${ban.address} ${ban.kind} ${ban.why}`}>
              <code>{ban.address}</code> {banText(ban)}{" "}
              <button
                className="flat danger-text"
                onClick={() => unban(ban.address)}
              >
                Lift the ban
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
