#!/usr/bin/env python3
"""The SDK's capability catalog (ccm/catalog.hpp) agrees with ccm/provider_abi.h.

A capability table of the header is a struct with a max_concurrency field. The catalog, as
printed by catalog_dump (argv[1]), must list every function slot of every such table exactly
once, under the table's capability ID (the "<id>" the comment before the typedef opens with),
pointing at the member of that name (same offset as the compiler lays it out), with the
"since 1.N (required|optional ...)" of the slot's comment and the emit_* service the comment
names ("emit its status" being emit_lb_status; none when it names none). The header is read with the layout freeze's parser.

Each problem is one line naming the table and the slot; the cases below prove that a slot
missing from the catalog, listed twice, misnamed or described differently is caught.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import abi_freeze  # noqa: E402  (the layout freeze's header parser and measurer)

HEADER = os.path.join(HERE, "..", "..", "plugin-sdk", "include", "ccm", "provider_abi.h")
EMITS = {"emit_instance_metadata": "emit_instance_metadata",
         "emit_item_error": "emit_instance_metadata",  # a batch's per-node error, same call
         "emit_lb_status": "emit_lb_status", "emit_route": "emit_route",
         "emit_string": "emit_string"}
DUMP = None  # the catalog_dump binary, from argv


def header_tables(text, parsed, offsets):
    """{table: {"id": id, "slots": {name: (offset, since, need, emit)}}} from the header."""
    tables = {}
    for struct, fields in parsed["structs"].items():
        if "max_concurrency" not in [f for f, _ in fields]:
            continue
        m = re.search(r'/\*\s*\n?\s*\*?\s*"([^"]+)":[^/]*?\*/\s*typedef\s+struct\s+%s\s*\{'
                      % struct, text, re.S)
        body = re.search(r"typedef\s+struct\s+%s\s*\{(.*?)\}\s*%s\s*;" % (struct, struct),
                         text, re.S).group(1)
        slots = {}
        for cm in re.finditer(r"/\*(.*?)\*/\s*[^;/]*?\(\s*\*\s*(\w+)\s*\)", body, re.S):
            comment, name = cm.group(1), cm.group(2)
            since = re.search(r"since 1\.(\d+) \((required|optional)", comment)
            emits = {EMITS[e] for e in re.findall(r"emit_\w+", comment) if e in EMITS}
            if re.search(r"emit\s+its\s+status", comment):  # a load balancer's status
                emits.add("emit_lb_status")
            emits = sorted(emits)
            slots[name] = (offsets[(struct, name)][0],
                           int(since.group(1)) if since else None,
                           since.group(2) if since else None,
                           emits[0] if len(emits) == 1 else ("none" if not emits else
                                                             "/".join(emits)))
        fn_fields = [f for f, t in fields if "(*)" in t]
        for f in fn_fields:
            if f not in slots:
                slots[f] = (offsets[(struct, f)][0], None, None, "none")
        tables[struct] = {"id": m.group(1) if m else None, "slots": slots}
    return tables


def catalog_lines(dump):
    out = subprocess.run([dump], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def problems(tables, lines):
    """One line per disagreement between the header's tables and the catalog's lines."""
    found = []
    seen = {}
    for table, cap_id, name, offset, emit, since, need in lines:
        key = (table, name)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            found.append("%s.%s is listed twice in the catalog" % (table, name))
        if table not in tables:
            found.append("the catalog lists %s.%s but the header has no capability table %s"
                         % (table, name, table))
            continue
        t = tables[table]
        if cap_id != t["id"]:
            found.append("the catalog gives %s the ID %s, the header %s" % (table, cap_id, t["id"]))
        if name not in t["slots"]:
            found.append("the catalog lists %s.%s, which the header does not have"
                         % (table, name))
            continue
        h_offset, h_since, h_need, h_emit = t["slots"][name]
        if int(offset) != h_offset:
            found.append("the catalog's %s.%s points at the member at offset %s, the header's "
                         "%s is at %d" % (table, name, offset, name, h_offset))
        if h_since is None:
            found.append("the header's comment of %s.%s does not say 'since 1.N (required' or "
                         "'(optional'" % (table, name))
        elif (int(since), need) != (h_since, h_need):
            found.append("the catalog says %s.%s is %s since 1.%s, the header %s since 1.%d"
                         % (table, name, need, since, h_need, h_since))
        if emit != h_emit:
            found.append("the catalog says %s.%s emits with %s, the header's comment names %s"
                         % (table, name, emit, h_emit))
    for table, t in tables.items():
        for name in t["slots"]:
            if (table, name) not in seen:
                found.append("the header's %s.%s is missing from ccm/catalog.hpp" % (table, name))
    return found


class CatalogTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(HEADER, encoding="utf-8") as f:
            cls.text = f.read()
        cls.lines = catalog_lines(DUMP)

    def tables(self, text):
        with tempfile.TemporaryDirectory(prefix="ccm-catalog-") as tmp:
            path = os.path.join(tmp, "provider_abi.h")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            parsed = abi_freeze.parse_header(path)
            _, offsets, _ = abi_freeze.measure(path, parsed)
        return header_tables(text, parsed, offsets)

    def test_the_catalog_matches_the_header(self):
        tables = self.tables(self.text)
        self.assertEqual(set(tables), {"ccm_instances_v1", "ccm_instances_batch_v1",
                                       "ccm_loadbalancer_v1", "ccm_routes_v1"})
        self.assertEqual(problems(tables, self.lines), [])
        self.assertEqual(len(self.lines), sum(len(t["slots"]) for t in tables.values()))

    def test_a_slot_missing_from_the_catalog(self):
        lines = [line for line in self.lines if line[2] != "update_load_balancer"]
        self.assertIn("the header's ccm_loadbalancer_v1.update_load_balancer is missing from "
                      "ccm/catalog.hpp", problems(self.tables(self.text), lines))

    def test_a_slot_appended_to_the_header_only(self):
        old = "                             const ccm_route* route);\n} ccm_routes_v1;"
        self.assertIn(old, self.text)
        text = self.text.replace(old, old.replace(
            "\n} ccm_routes_v1;",
            "\n  /* since 1.1 (optional): x. */\n"
            "  ccm_status (*update_route)(ccm_provider* provider, const ccm_call* call);\n"
            "} ccm_routes_v1;"))
        self.assertIn("the header's ccm_routes_v1.update_route is missing from ccm/catalog.hpp",
                      problems(self.tables(text), self.lines))

    def test_a_slot_listed_twice(self):
        lines = self.lines + [line for line in self.lines if line[2] == "list_routes"]
        self.assertIn("ccm_routes_v1.list_routes is listed twice in the catalog",
                      problems(self.tables(self.text), lines))

    def test_a_name_on_another_member(self):
        swapped = []
        for line in self.lines:
            line = list(line)
            if line[2] == "create_route":
                line[2] = "delete_route"
            elif line[2] == "delete_route":
                line[2] = "create_route"
            swapped.append(line)
        found = problems(self.tables(self.text), swapped)
        self.assertTrue(any("ccm_routes_v1.create_route points at the member at offset" in p
                            for p in found), found)

    def test_a_different_output_or_requirement(self):
        lines = [list(line) for line in self.lines]
        for line in lines:
            if line[2] == "get_load_balancer_name":
                line[4] = "none"
            if line[2] == "instance_exists":
                line[5:7] = ["1", "optional"]
        found = problems(self.tables(self.text), lines)
        self.assertIn("the catalog says ccm_loadbalancer_v1.get_load_balancer_name emits with "
                      "none, the header's comment names emit_string", found)
        self.assertIn("the catalog says ccm_instances_v1.instance_exists is optional since 1.1, "
                      "the header required since 1.0", found)

    def test_a_different_capability_id(self):
        lines = [list(line) for line in self.lines]
        for line in lines:
            if line[0] == "ccm_instances_batch_v1":
                line[1] = "ccm.instances.batch/2"
        self.assertIn("the catalog gives ccm_instances_batch_v1 the ID ccm.instances.batch/2, "
                      "the header ccm.instances.batch/1", problems(self.tables(self.text), lines))


if __name__ == "__main__":
    DUMP = sys.argv.pop(1)
    unittest.main()
