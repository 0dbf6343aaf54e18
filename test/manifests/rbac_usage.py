"""What the RBAC manifests grant a subject, split into single permissions, and which of them a
run used, from the authorization decisions kubesim recorded (kubesim --record-authz,
GET /admin/authz).

A permission ("atom") is one verb on one resource (or subresource) of one API group, in a
scope (every namespace, or one namespace for a Role or a RoleBinding), possibly limited to
resource names; or one verb on one non-resource URL. A rule with verbs [get, list] is two
atoms. An atom is used when some allowed decision for the subject matches it.

A rule (or a binding to a role that is not in the manifests) may be kept although unused: the
comment block right above it in the manifest then contains "kept-unused:" and says why.
"""
import os

import yaml

KEPT_MARKER = "kept-unused:"
# What "*" stands for among verbs.
STANDARD_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete",
                  "deletecollection"]


class Rule:
    """One rule of a role, with where it came from."""

    def __init__(self, data, role, scope, origin, kept_reason):
        self.data = data
        self.role = role            # "ClusterRole/x" or "Role/ns/x"
        self.scope = scope          # "" = every namespace; else the namespace
        self.origin = origin        # "file:line" of the rule, or of the binding
        self.kept_reason = kept_reason  # text after the marker, or None

    def atoms(self):
        verbs = self.data.get("verbs") or []
        if "*" in verbs:
            verbs = STANDARD_VERBS
        out = []
        urls = self.data.get("nonResourceURLs") or []
        for url in urls:
            for v in verbs:
                out.append(Atom(self, v, None, None, url, None))
        for group in self.data.get("apiGroups") or []:
            for res in self.data.get("resources") or []:
                for v in verbs:
                    out.append(Atom(self, v, group, res, None,
                                    tuple(self.data.get("resourceNames") or ()) or None))
        return out


class Atom:
    def __init__(self, rule, verb, group, resource, url, names):
        self.rule = rule
        self.verb = verb
        self.group = group
        self.resource = resource
        self.url = url
        self.names = names

    def matches(self, d):
        """True when the recorded decision d is one this atom allows."""
        if d.get("verb") != self.verb:
            return False
        if self.url is not None:
            path = d.get("nonResourceURL")
            if path is None:
                return False
            return self.url == path or (self.url.endswith("*") and path.startswith(self.url[:-1]))
        if "nonResourceURL" in d:
            return False
        if self.group != "*" and d.get("apiGroup") != self.group:
            return False
        full = d["resource"] + ("/" + d["subresource"] if d.get("subresource") else "")
        if self.resource != "*" and self.resource != full:
            if not (self.resource.startswith("*/") and d.get("subresource") == self.resource[2:]):
                return False
        if self.names is not None and d.get("name") not in self.names:
            return False
        if self.rule.scope and d.get("namespace") != self.rule.scope:
            return False
        return True

    def describe(self):
        if self.url is not None:
            what = "%s %s" % (self.verb, self.url)
        else:
            what = "%s %s%s" % (self.verb, self.resource,
                                "" if self.group == "" else "." + self.group)
            if self.names:
                what += " " + ",".join(self.names)
            what += " in " + (self.rule.scope or "all namespaces")
        return "%s  (%s, %s)" % (what, self.rule.role, self.rule.origin)


def comment_block_above(lines, line_index):
    """The contiguous comment lines right above line_index (0-based), joined."""
    out = []
    i = line_index - 1
    while i >= 0:
        text = lines[i].strip()
        if text.startswith("#"):
            out.insert(0, text.lstrip("#").strip())
            i -= 1
        elif text == "---" or text == "":
            # A document separator or a blank line ends the block.
            break
        else:
            break
    return " ".join(out)


def kept_reason(lines, line_index):
    block = comment_block_above(lines, line_index)
    pos = block.find(KEPT_MARKER)
    if pos < 0:
        return None
    return block[pos + len(KEPT_MARKER):].strip()


def _node_value(node, key):
    for k, v in node.value:
        if k.value == key:
            return v
    return None


def load_documents(paths):
    """Every YAML document (dict) of the files under `paths` with its file, 0-based line and
    the composed node (for line numbers of nested items)."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _dirs, names in os.walk(p):
                files += [os.path.join(root, n) for n in names if n.endswith((".yaml", ".yml"))]
        else:
            files.append(p)
    docs = []
    for f in sorted(files):
        with open(f) as fh:
            text = fh.read()
        lines = text.splitlines()
        for node in yaml.compose_all(text, Loader=yaml.SafeLoader):
            if node is None or not isinstance(node, yaml.MappingNode):
                continue
            data = yaml.safe_load(yaml.serialize(node))
            docs.append({"file": f, "lines": lines, "line": node.start_mark.line, "node": node,
                         "data": data})
    return docs


def granted_rules(docs, subject, external_roles):
    """The rules `subject` ({"kind": "ServiceAccount", "name", "namespace"}) gets through the
    bindings in `docs`. Roles not defined in docs come from external_roles
    {"ClusterRole/x" or "Role/ns/x": [rules]} (the server's bootstrap roles); their rules are
    kept-unused when the binding's comment says so."""
    roles = {}
    for d in docs:
        data = d["data"]
        if data.get("apiVersion") != "rbac.authorization.k8s.io/v1":
            continue
        kind = data.get("kind")
        meta = data.get("metadata") or {}
        if kind in ("ClusterRole", "Role"):
            key = kind + "/" + ((meta.get("namespace") + "/") if kind == "Role" else "") + \
                meta["name"]
            roles[key] = d
    out = []
    for d in docs:
        data = d["data"]
        kind = data.get("kind")
        if kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        meta = data.get("metadata") or {}
        ns = meta.get("namespace", "") if kind == "RoleBinding" else ""
        bound = False
        for s in data.get("subjects") or []:
            s_ns = s.get("namespace") or ns
            if (s.get("kind") == subject["kind"] and s.get("name") == subject["name"] and
                    s_ns == subject["namespace"]):
                bound = True
        if not bound:
            continue
        ref = data["roleRef"]
        role_key = ref["kind"] + "/" + (ns + "/" if ref["kind"] == "Role" else "") + ref["name"]
        binding = "%s/%s%s" % (kind, ns + "/" if ns else "", meta["name"])
        where = "%s:%d" % (os.path.basename(d["file"]), d["line"] + 1)
        if role_key in roles:
            rd = roles[role_key]
            rules_node = _node_value(rd["node"], "rules")
            for i, r in enumerate(rd["data"].get("rules") or []):
                item = rules_node.value[i]
                line = item.start_mark.line
                out.append(Rule(r, role_key, ns, "%s:%d via %s" % (
                    os.path.basename(rd["file"]), line + 1, binding),
                    kept_reason(rd["lines"], line)))
        else:
            if role_key not in external_roles:
                raise AssertionError("%s refers to %s, which is neither in the manifests nor "
                                     "a built-in role" % (binding, role_key))
            reason = kept_reason(d["lines"], d["line"])
            for r in external_roles[role_key]:
                out.append(Rule(r, role_key + " (built-in)", ns, "%s %s" % (where, binding),
                                reason))
    return out


def usage(rules, decisions):
    """(used, unused): used is [(atom, count)], unused is [atom]."""
    used, unused = [], []
    allowed = [d for d in decisions if d.get("allowed")]
    for rule in rules:
        for atom in rule.atoms():
            count = sum(d.get("count", 1) for d in allowed if atom.matches(d))
            if count:
                used.append((atom, count))
            else:
                unused.append(atom)
    return used, unused


def uncovered(rules, decisions):
    """Allowed decisions that no rule of `rules` explains (the subject got them elsewhere,
    e.g. from a group binding of the cluster)."""
    atoms = [a for r in rules for a in r.atoms()]
    return [d for d in decisions if d.get("allowed") and not any(a.matches(d) for a in atoms)]


def report(used, unused):
    """The permissions rule by rule: used ones with their counts, unused ones with the
    reason they are kept, or NOT JUSTIFIED."""
    rules = []
    by_rule = {}
    for atom, count in used:
        by_rule.setdefault(id(atom.rule), (atom.rule, [], []))[1].append((atom, count))
    for atom in unused:
        by_rule.setdefault(id(atom.rule), (atom.rule, [], []))[2].append(atom)
    for rule, u, n in by_rule.values():
        rules.append((rule.origin, rule, u, n))
    lines = ["permissions used: %d, never used: %d (%d not justified)" % (
        len(used), len(unused), len([a for a in unused if not a.rule.kept_reason]))]
    for origin, rule, u, n in rules:
        lines.append("%s  %s" % (rule.role, origin))
        for atom, count in u:
            lines.append("    used %6dx  %s" % (count, atom.describe().split("  (")[0]))
        for atom in n:
            lines.append("    UNUSED       %s" % atom.describe().split("  (")[0])
        if n:
            why = rule.kept_reason
            lines.append("      %s" % ("KEPT: " + why[:200] + ("..." if len(why) > 200 else "")
                                       if why else "NOT JUSTIFIED: remove it, or say why it "
                                       "is kept in a comment starting with " + KEPT_MARKER))
    return "\n".join(lines)


def decision_text(d):
    if "nonResourceURL" in d:
        return "%s %s" % (d["verb"], d["nonResourceURL"])
    res = d["resource"] + ("/" + d["subresource"] if d.get("subresource") else "")
    return "%s %s%s%s%s" % (d["verb"], res, "." + d["apiGroup"] if d.get("apiGroup") else "",
                            " " + d["name"] if d.get("name") else "",
                            " in " + d["namespace"] if d.get("namespace") else "")
