"""Moved to appliance/netcheck.py (below the core and the storage backends); kept so that
imports of appliance.core.netcheck go on working."""

from ..netcheck import *  # noqa: F403
from ..netcheck import Destinations, http_handlers, pin_botocore, refusal, system_resolver  # noqa: F401
