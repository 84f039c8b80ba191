import { InvitationLink } from "../../../components/InvitationLink.jsx";
import { ResourceListPage, yesNo } from "../../../components/lists.jsx";
import { RowActions } from "../../../components/RowActions.jsx";
import { formatTime } from "../../../lib/format.js";
import { useProfiles } from "../api/getProfiles.js";
import {
  invitable,
  isSelf,
  useProfileActions,
} from "../components/useProfileActions.js";

const COLUMNS = [
  ["Username", (p) => p.username],
  ["Email", (p) => p.email],
  ["Admin", (p) => (p.is_admin ? "yes" : "")],
  ["Active", (p) => yesNo(p.active)],
  ["Home", (p) => p.home],
  ["Last login", (p) => formatTime(p.last_login, "never")],
];

/** A profile's row actions: open it, invite it while it has no password, delete it. */
export function profileActions(profile, { invite, destroy }) {
  const self = isSelf(profile);
  return [
    {
      label: "Edit",
      ariaLabel: `Edit ${profile.username}`,
      to: `/admin/profiles/${profile.id}`,
    },
    invitable(profile)
      ? {
          label: "Send invitation",
          ariaLabel: `Send an invitation to ${profile.username}`,
          onSelect: () => invite(profile),
        }
      : null,
    {
      label: "Delete",
      ariaLabel: `Delete ${profile.username}`,
      danger: true,
      disabled: self,
      title: self ? "You cannot delete yourself" : "",
      onSelect: () => destroy(profile),
    },
  ];
}

export function ProfileList() {
  const actions = useProfileActions();
  const { invitation, setInvitation } = actions;
  const columns = [
    ...COLUMNS,
    [
      "Actions",
      (p) => (
        <RowActions name={p.username} actions={profileActions(p, actions)} />
      ),
      { actions: true },
    ],
  ];
  return (
    <>
      <ResourceListPage
        title="Profiles"
        createTo="/admin/profiles/create"
        useList={useProfiles}
        columns={columns}
        rowLink={(p) => `/admin/profiles/${p.id}`}
      />
      {invitation ? (
        <InvitationLink
          invitation={invitation}
          onClose={() => setInvitation(null)}
        />
      ) : null}
    </>
  );
}
