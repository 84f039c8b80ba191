"""moto's server as a stand-in for an S3 service with an STS that trusts an OpenID
provider (as MinIO or AWS with an IAM OIDC identity provider): run as a script with
moto.server's arguments. With IAM authentication on, moto refuses the unsigned
AssumeRoleWithWebIdentity call (it is unsigned at AWS); here it is let through when
its WebIdentityToken is an id_token of the stand-in provider (HS256 with the key in
STANDIN_JWT_KEY, audience STANDIN_CLIENT_ID, not expired), and refused with
InvalidIdentityToken otherwise. S3 then checks the temporary keys (and their
session token) it hands out, like any others."""

from __future__ import annotations

import os
import sys

import jwt
from moto.core import authorization
from moto.core.exceptions import _RESTError
from moto.server import main


class InvalidIdentityToken(_RESTError):
    code = 400

    def __init__(self, why: str):
        super().__init__("InvalidIdentityToken", f"The web identity token is not valid: {why}")


original = authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action


def authenticate(self, iam_request_cls, resource="*"):
    if self._get_action() == "AssumeRoleWithWebIdentity":
        token = self._get_param("WebIdentityToken") or ""
        try:
            jwt.decode(token, os.environ["STANDIN_JWT_KEY"], algorithms=["HS256"],
                       audience=os.environ["STANDIN_CLIENT_ID"])  # fmt: skip
        except jwt.PyJWTError as e:
            raise InvalidIdentityToken(str(e)) from None
        return None
    return original(self, iam_request_cls, resource)


authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate

if __name__ == "__main__":
    main(sys.argv[1:])
