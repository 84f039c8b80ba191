import { Link } from "react-router";
import { useOrganisation } from "../api/getOrganisation.js";

/** '{n} Days left on trial', for admins while the organisation is on trial. */
export function TrialChip() {
  const { data } = useOrganisation();
  if (!data || !data.on_trial) return null;
  return (
    <Link className="chip trial" to="/admin/organisation">
      {data.days_left_on_trial} Days left on trial
    </Link>
  );
}
