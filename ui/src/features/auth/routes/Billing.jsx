import { Link } from "react-router";
import { usePageTitle } from "../../../components/PageMeta.js";

/** Where the client sends everyone of an organisation whose payment is missing. */
export function Billing() {
  usePageTitle("Payment missing");
  return (
    <div className="card">
      <h1>Payment missing</h1>
      <p>
        Your organisation's subscription has no valid payment, so its portal is
        paused: nobody in the organisation can sign in or move files, by this
        web page, SFTP or FTP, until it is settled. No files are deleted;
        everything is there again once the payment is in order.
      </p>
      <p>
        An organisation whose free trial has ended is in this state too, until a
        subscription is paid.
      </p>
      <p>
        <strong>Whom to contact:</strong> your organisation's administrator, who
        manages the subscription with the operator of this portal.
        Administrators: contact the operator who set up your organisation to
        settle the payment.
      </p>
      <p>
        <Link to="/auth/login">Back to sign in</Link>
      </p>
    </div>
  );
}
