"""The control plane's keys and identities, made fresh for each cluster.

- One CA signs kube-apiserver's serving certificate: every name a client may dial (127.0.0.1,
  localhost, the `kubernetes` Service's cluster IP and DNS names), so in-cluster clients that
  verify against the service-account `ca.crt` accept it.
- A service-account signing key pair: kube-apiserver issues and verifies tokens with it,
  kube-controller-manager signs the legacy ones.
- A static token file: the users (admin, alice, bob and any from a users file: name, uid and
  groups as the stand-in has them) and the control plane's own components, each with a random
  bearer token. kube-apiserver adds `system:authenticated` itself.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from certs.authority import write_serving_files
from localcluster.users import AUTHENTICATED, MASTERS, User

NODES_GROUP = "system:nodes"
KUBELET = User("kubelet", "system:node:localcluster-kubelets", "", (NODES_GROUP,))
"""The simulated kubelets, one identity for every node (the Node authorizer defers to RBAC)."""
COMPONENTS = (
    User("kube-controller-manager", "system:kube-controller-manager", "", ()),
    User("kube-scheduler", "system:kube-scheduler", "", ()),
    KUBELET,
    # The test bed's own informers and set-up (CRDs, operator accounts): a cluster administrator.
    User("testbed", "localcluster:testbed", "", (MASTERS,)),
)


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_public: Path
    token_file: Path
    tokens: dict[str, str]  # user name (kubeconfig context) -> bearer token


def apiserver_names(service_ip: str) -> list[str]:
    return ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
            "localhost", "127.0.0.1", service_ip]


def token_csv(users: list[User], tokens: dict[str, str]) -> str:
    """kube-apiserver's --token-auth-file: token,user,uid[,"group,group"]. A user without groups
    gets three columns: kube-apiserver splits a fourth, empty one into the group ""."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for user in users:
        groups = [g for g in user.groups if g != AUTHENTICATED]
        row = [tokens[user.name], user.username, user.uid or user.username]
        writer.writerow(row + [",".join(groups)] if groups else row)
    return out.getvalue()


def write_pki(directory: Path, users: list[User], service_ip: str, now: dt.datetime) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    serving = write_serving_files(directory, apiserver_names(service_ip), now, reuse_ca=False)
    key = ec.generate_private_key(ec.SECP256R1())
    private = directory / "service-account.key"
    public = directory / "service-account.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    private.chmod(0o600)
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    everyone = [*users, *COMPONENTS]
    tokens = {u.name: secrets.token_urlsafe(32) for u in everyone}
    token_file = directory / "tokens.csv"
    token_file.write_text(token_csv(everyone, tokens))
    token_file.chmod(0o600)
    return Pki(serving.ca_cert, directory / "ca.key", serving.cert, serving.key, private, public, token_file, tokens)
