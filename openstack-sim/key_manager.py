"""The simulator's Barbican (key-manager v1): certificate containers and their secrets, with
Barbican's read rules (the owning project, or a user on the object's read ACL), and the check
Octavia makes of a listener's TLS references.

Only what a load balancer needs is served:
  GET /v1/containers/{id}   the container (404 unknown, 403 not readable by the caller)
  GET /v1/secrets/{id}      a secret's metadata (same rules)
  GET /v1/containers/{id}/acl, GET /v1/secrets/{id}/acl   the read ACL
Tests create containers with the control call POST /_sim/barbican/containers (see
KeyManager.create_container) and remove them with POST /_sim/barbican/delete {"id": ...}.
"""

import datetime
import uuid


class KeyManagerError(Exception):
    """An answer other than 200, in Barbican's error shape."""

    def __init__(self, status, body):
        super().__init__(status)
        self.status = status
        self.body = body


def barbican_error(status, title, description):
    return KeyManagerError(status, {"code": status, "title": title, "description": description})


def _stamp():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


class KeyManager:
    def __init__(self):
        self.containers = {}
        self.secrets = {}

    def reset(self):
        self.containers = {}
        self.secrets = {}

    # ---- objects ------------------------------------------------------------------------------

    def create_container(self, body, base_url):
        """POST /_sim/barbican/containers {"id"?, "name"?, "project_id"? (p-demo),
        "creator_id"? (u-demo), "project_access"? (true), "acl_users"? ([]),
        "secret_names"? (["certificate", "private_key"])}: a certificate container with one
        secret per name, owned by the project. base_url is the key-manager endpoint the refs
        point into (ending in /key-manager)."""
        cid = body.get("id") or str(uuid.uuid4())
        project = body.get("project_id", "p-demo")
        creator = body.get("creator_id", "u-demo")
        access = {"project_access": bool(body.get("project_access", True)),
                  "acl_users": list(body.get("acl_users", []))}
        refs = []
        for name in body.get("secret_names", ["certificate", "private_key"]):
            sid = str(uuid.uuid4())
            secret = {"secret_ref": "%s/v1/secrets/%s" % (base_url, sid), "name": name,
                      "status": "ACTIVE", "secret_type": "opaque", "algorithm": None,
                      "bit_length": None, "mode": None, "expiration": None,
                      "content_types": {"default": "application/octet-stream"},
                      "creator_id": creator, "created": _stamp(), "updated": _stamp(),
                      "_id": sid, "_project": project, "_access": dict(access)}
            self.secrets[sid] = secret
            refs.append({"name": name, "secret_ref": secret["secret_ref"]})
        container = {"container_ref": "%s/v1/containers/%s" % (base_url, cid),
                     "name": body.get("name", "tls-" + cid[:8]), "type": "certificate",
                     "status": "ACTIVE", "secret_refs": refs, "consumers": [],
                     "creator_id": creator, "created": _stamp(), "updated": _stamp(),
                     "_id": cid, "_project": project, "_access": access}
        self.containers[cid] = container
        return self.view(container)

    def delete(self, oid):
        """POST /_sim/barbican/delete {"id"}: a container (with its secrets) or a secret."""
        container = self.containers.pop(oid, None)
        if container is not None:
            for ref in container["secret_refs"]:
                self.secrets.pop(ref["secret_ref"].rsplit("/", 1)[-1], None)
            return True
        return self.secrets.pop(oid, None) is not None

    @staticmethod
    def view(obj):
        return {k: v for k, v in obj.items() if not k.startswith("_")}

    @staticmethod
    def readable(obj, user_id, project_id):
        """Barbican's rule: the creator, a member of the owning project while project access is
        on, or a user on the read ACL."""
        access = obj["_access"]
        if user_id is not None and (user_id == obj["creator_id"] or user_id in access["acl_users"]):
            return True
        return project_id == obj["_project"] and access["project_access"]

    def _find(self, kind, oid, user_id, project_id):
        store = self.containers if kind == "containers" else self.secrets
        obj = store.get(oid)
        if obj is None:
            what = "Secrets container" if kind == "containers" else "Secret"
            raise barbican_error(404, "Not Found", "%s not found." % what)
        if not self.readable(obj, user_id, project_id):
            what = "SecretContainer" if kind == "containers" else "Secret"
            raise barbican_error(403, "Forbidden",
                                 "%s retrieval attempt not allowed - please review your "
                                 "user/project privileges" % what)
        return obj

    # ---- API ----------------------------------------------------------------------------------

    def serve(self, method, rel, user_id, project_id):
        """rel is the path under the key-manager endpoint ("/v1/containers/ID")."""
        if rel in ("", "/") and method == "GET":
            return 300, {"versions": {"values": [{
                "id": "v1", "status": "stable", "updated": "2015-04-28T00:00:00Z",
                "links": [{"rel": "self", "href": "v1/"}]}]}}
        parts = [p for p in rel.split("/") if p]
        if (method != "GET" or len(parts) not in (3, 4) or parts[0] != "v1"
                or parts[1] not in ("containers", "secrets")
                or (len(parts) == 4 and parts[3] != "acl")):
            raise barbican_error(404, "Not Found", "The resource could not be found.")
        obj = self._find(parts[1], parts[2], user_id, project_id)
        if len(parts) == 4:
            access = obj["_access"]
            return 200, {"read": {"project-access": access["project_access"],
                                  "users": access["acl_users"], "created": obj["created"],
                                  "updated": obj["updated"]}}
        return 200, self.view(obj)

    def octavia_can_read(self, ref, user_id, project_id):
        """Whether Octavia, acting for the caller, can load the certificate behind ref (a
        container or secret URL of this key manager)."""
        parts = ref.rstrip("/").split("/")
        if len(parts) < 2 or parts[-2] not in ("containers", "secrets"):
            return False
        try:
            self._find(parts[-2], parts[-1], user_id, project_id)
        except KeyManagerError:
            return False
        return True
