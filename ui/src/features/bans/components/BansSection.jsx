import { useConfirm } from "../../../components/Dialog.jsx";
import { errorText, useNotify } from "../../../components/notifications.jsx";
import { formatTime } from "../../../lib/format.js";
import { useBans, useLiftBan } from "../api/bans.js";

/** One ban as a sentence: who was being guessed, and until when. */
export function banText(ban) {
  const names = (ban.usernames || []).join(", ");
  const repeat = ban.offences > 1 ? ` (offence ${ban.offences})` : "";
  return `Tried ${names}; banned until ${formatTime(ban.until, "—")}${repeat}`;
}

/** Addresses banned for repeated failed sign-ins on the organisation's usernames; lifting one. */
export function BansSection() {
  const notify = useNotify();
  const confirm = useConfirm();
  const lift = useLiftBan();
  const { data, error } = useBans();
  const bans = data ? data.results : [];

  async function unban(address) {
    const sure = await confirm({
      title: "Lift the ban",
      message: `Let ${address} sign in again now?`,
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
        Addresses that failed to sign in too often as one of your users are
        refused for a while. Lift a ban when you know the address.
      </p>
      {error ? <p className="error">The bans could not be loaded.</p> : null}
      {data && !bans.length ? (
        <p className="help">No address is banned.</p>
      ) : null}
      {bans.length ? (
        <ul>
          {bans.map((ban) => (
            <li key={ban.address}>
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
