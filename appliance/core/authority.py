"""Who may change whom: the one rule of authority, called by every path that
changes a profile (or what a profile owns, such as its share links).

Authority is ordered: the operator (a superuser) > an organisation admin > a user.
Nobody changes a profile that holds more than they do, and nobody gives more than
they hold: an admin can make admins but never an operator, and the operator role
is never given or taken through the profiles API. Changing oneself is allowed here;
the callers keep their own rules about oneself (say, not removing one's own admin
rights).
"""

from __future__ import annotations

from ..errors import PermissionDenied
from ..models import Profile
from ..store import queries

USER, ADMIN, OPERATOR = 0, 1, 2

OPERATOR_ONLY = "Only the operator can change the operator's profile."
ADMIN_ONLY = "Only an admin can change an admin's profile."
OPERATOR_ROLE = (
    "The operator role cannot be given or taken through profiles: "
    "it belongs to the account made at setup (use `appliance setup` or the command line)."
)
NO_HIGHER_ROLE = "You cannot give a role higher than your own."
NOT_ALLOWED = "You do not have permission to perform this action."


def rank(profile: Profile) -> int:
    """How much a profile holds: OPERATOR, ADMIN or USER."""
    if profile.is_superuser:
        return OPERATOR
    return ADMIN if profile.is_admin else USER


def require_authority(actor: Profile, target: Profile) -> None:
    """Refuse (PermissionDenied) unless `actor` may change `target`: itself, or a
    profile that holds no more than `actor` does."""
    if actor.id == target.id or rank(actor) >= rank(target):
        return
    raise PermissionDenied(OPERATOR_ONLY if rank(target) == OPERATOR else ADMIN_ONLY)


async def require_authority_over_owner(store, account, owner_id: int | None) -> None:
    """Refuse (PermissionDenied) unless `account` may change the profile `owner_id` of
    its organisation: what a profile owns (a share link, an API token) is changed, and
    revoked, only by whom may change that profile. An owner since deleted is nobody's."""
    if owner_id is None or owner_id == account.profile.id:
        return
    owner = await store.run(queries.get_profile, account.organisation.id, owner_id)
    if owner is not None:
        require_authority(account.profile, owner)


def require_grant(actor: Profile, *, is_admin: bool) -> None:
    """Refuse giving the admin role to someone when `actor` does not hold it."""
    if is_admin and rank(actor) < ADMIN:
        raise PermissionDenied(NO_HIGHER_ROLE)


def require_operator(actor: Profile) -> None:
    """Refuse (PermissionDenied) unless `actor` is the operator: the appliance-wide views and changes."""
    if not actor.is_superuser:
        raise PermissionDenied(NOT_ALLOWED)
