#!/usr/bin/env python3
"""The plugin ABI layout freeze: test/abi/abi_freeze.txt against ccm/provider_abi.h.

The freeze file holds, one line each, every constant (#define with a value), every scalar
and function-pointer typedef, every struct's size per ABI minor, and every field and function
slot of every struct with its offset, size and type on x86_64 (LP64), together with the minor
that introduced it. Within a major nothing frozen may change; an appended field or a new minor
is written into the freeze by `--update`, in the same commit as the header change.

    abi_freeze.py --check               compare the header with the freeze; also compile the
                                        generated test as C11 and C++ (exit 1 on any difference)
    abi_freeze.py --update              append what the header added (refuses any change to
                                        what is frozen, and fields placed inside an old size)
    abi_freeze.py --generate OUT.c      write the C test of the freeze (_Static_assert of every
                                        entry; string constants are compared at run time)

Options: --header PATH (default: plugin-sdk/include/ccm/provider_abi.h), --freeze PATH
(default: test/abi/abi_freeze.txt), --cc / --cxx (default: $CC/$CXX or cc/c++).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_HEADER = os.path.join(SOURCE, "plugin-sdk", "include", "ccm", "provider_abi.h")
DEFAULT_FREEZE = os.path.join(HERE, "abi_freeze.txt")
UPDATE_HINT = ("if the header change is an append in a new minor, run "
               "`python3 test/abi/abi_freeze.py --update` and commit test/abi/abi_freeze.txt "
               "with it")

# Macros that are not ABI values: the include guard and the export attribute.
NOT_CONSTANTS = {"CCM_PROVIDER_ABI_H", "CCM_PLUGIN_EXPORT"}
QUALIFIERS = {"const", "volatile", "struct", "unsigned", "signed"}


class FreezeError(Exception):
    """The header or the freeze is not what the rules allow; the message says where."""


# ---- parsing the header ----------------------------------------------------------------------

def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text,
                  flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def squash(text):
    """One space between tokens, none inside '(*' and before ',', ')' or '*'."""
    text = " ".join(text.split())
    text = re.sub(r"\s*\*\s*", "* ", text)
    text = re.sub(r"\s*,\s*", ", ", text)
    text = re.sub(r"\(\s*", "(", text)
    text = re.sub(r"\s*\)", ")", text)
    text = text.replace("* )", "*)").replace("* ,", "*,")
    while "* *" in text:
        text = text.replace("* *", "**")
    return text.strip()


def drop_parameter_names(params):
    """'const ccm_call* call, ccm_str id' -> 'const ccm_call*, ccm_str'."""
    out = []
    for param in params.split(","):
        tokens = re.findall(r"[A-Za-z_]\w*|\*", param)
        words = [t for t in tokens if t != "*" and t not in QUALIFIERS]
        if len(words) >= 2 and tokens[-1] == words[-1]:
            tokens = tokens[:-1]
        out.append(squash(" ".join(tokens)))
    return ", ".join(out)


def parse_declaration(decl, where):
    """'ccm_status (*create)(const ccm_call* call, ...)' -> ('create', 'ccm_status (*)(...)');
    'const ccm_kv* labels' -> ('labels', 'const ccm_kv*')."""
    decl = " ".join(decl.split())
    fn = re.fullmatch(r"(.+?)\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\((.*)\)", decl)
    if fn:
        ret, name, params = fn.groups()
        return name, "%s (*)(%s)" % (squash(ret), drop_parameter_names(params))
    plain = re.fullmatch(r"(.+?[\s*])([A-Za-z_]\w*)", decl)
    if not plain or "[" in decl or ":" in decl:
        raise FreezeError("%s: cannot read the declaration %r (arrays and bit-fields are not "
                          "allowed in the ABI)" % (where, decl))
    return plain.group(2), squash(plain.group(1))


def parse_header(path):
    """{'minor', 'constants', 'typedefs', 'structs', 'functions'} read from the header."""
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    constants = {}
    for m in re.finditer(r"^#define\s+([A-Z_][A-Z0-9_]*)\s+(.*?)\s*$", strip_comments(raw),
                         re.M):
        name, value = m.group(1), m.group(2).strip()
        if name in NOT_CONSTANTS or value == "" or "(" in value:
            continue
        constants[name] = value
    text = strip_comments(raw)
    text = re.sub(r"^\s*#.*$", "", text, flags=re.M)
    structs = {}
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        tag, body, name = m.groups()
        if tag != name:
            raise FreezeError("%s: struct tag %s and typedef %s differ" % (path, tag, name))
        fields = []
        for decl in body.split(";"):
            if decl.strip():
                fields.append(parse_declaration(decl, "%s: struct %s" % (path, name)))
        structs[name] = fields
    rest = re.sub(r"typedef\s+struct\s+\w+\s*\{.*?\}\s*\w+\s*;", "", text, flags=re.S)
    # Inline helpers compile into the plugin; they are API, not layout.
    rest = re.sub(r"static\s+inline\s[^;{}]*\{[^{}]*\}", "", rest)
    typedefs = {}
    functions = {}
    for stmt in rest.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt or stmt.startswith("typedef struct") or stmt in ("}", "extern \"C\" {"):
            continue
        stmt = stmt.replace('extern "C" {', "").replace("}", "").strip()
        if stmt.startswith("typedef "):
            name, ctype = parse_declaration(stmt[len("typedef "):], "%s: typedef" % path)
            typedefs[name] = ctype
            continue
        fn = re.fullmatch(r"CCM_PLUGIN_EXPORT\s+(.+?)\s+([A-Za-z_]\w*)\s*\((.*)\)", stmt)
        if fn:
            ret, name, params = fn.groups()
            functions[name] = "%s (*)(%s)" % (squash(ret), drop_parameter_names(params))
        elif stmt:
            raise FreezeError("%s: cannot read %r" % (path, stmt[:80]))
    if "CCM_ABI_MAJOR" not in constants or "CCM_ABI_MINOR" not in constants:
        raise FreezeError("%s: no CCM_ABI_MAJOR / CCM_ABI_MINOR" % path)
    return {"major": int(constants["CCM_ABI_MAJOR"]), "minor": int(constants["CCM_ABI_MINOR"]),
            "constants": constants, "typedefs": typedefs, "structs": structs,
            "functions": functions}


# ---- measuring with the compiler -------------------------------------------------------------

def compiler(kind):
    env = os.environ.get("CC" if kind == "c" else "CXX")
    return shlex.split(env) if env else ["cc" if kind == "c" else "c++"]


def measure(header_path, parsed, cc=None):
    """{(struct, field): (offset, size)} and {struct: size} as the C compiler lays them out."""
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             '#include "%s"' % os.path.abspath(header_path), "int main(void) {"]
    for struct, fields in parsed["structs"].items():
        lines.append('  printf("S %s %%zu\\n", sizeof(%s));' % (struct, struct))
        for field, _ in fields:
            lines.append('  printf("F %s %s %%zu %%zu\\n", offsetof(%s, %s), '
                         'sizeof(((%s*)0)->%s));' % (struct, field, struct, field, struct, field))
    for name in parsed["typedefs"]:
        lines.append('  printf("T %s %%zu\\n", sizeof(%s));' % (name, name))
    lines += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory(prefix="ccm-abi-") as tmp:
        src = os.path.join(tmp, "measure.c")
        exe = os.path.join(tmp, "measure")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        run(compiler("c") if cc is None else cc,
            ["-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", src, "-o", exe])
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    sizes, fields, typedef_sizes = {}, {}, {}
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == "S":
            sizes[parts[1]] = int(parts[2])
        elif parts[0] == "F":
            fields[(parts[1], parts[2])] = (int(parts[3]), int(parts[4]))
        else:
            typedef_sizes[parts[1]] = int(parts[2])
    return sizes, fields, typedef_sizes


def run(cmd, args):
    result = subprocess.run(list(cmd) + list(args), capture_output=True, text=True)
    if result.returncode != 0:
        raise FreezeError("%s failed:\n%s%s" % (" ".join(list(cmd) + list(args)),
                                                result.stdout, result.stderr))
    return result


# ---- the freeze file -------------------------------------------------------------------------

class Freeze:
    """The parsed freeze file. Entries keep their order; `since` is "1.0", "1.1", ..."""

    def __init__(self):
        self.major = None
        self.minors = []                 # every minor the freeze has seen, ascending
        self.constants = {}              # name -> (value, since)
        self.typedefs = {}               # name -> (type, size, since)
        self.functions = {}              # name -> (type, since)
        self.sizes = {}                  # struct -> {minor: size}
        self.struct_since = {}           # struct -> since
        self.fields = {}                 # struct -> [(field, offset, size, type, since)]

    @staticmethod
    def load(path):
        fr = Freeze()
        if not os.path.exists(path):
            return fr
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                where = "%s:%d" % (path, number)
                try:
                    fr._read(line)
                except (ValueError, IndexError, KeyError) as e:
                    raise FreezeError("%s: cannot read %r (%s)" % (where, line, e)) from None
        return fr

    def _read(self, line):
        kind, rest = line.split(" ", 1)
        if kind == "abi":
            major, minors = rest.split(" ", 1)
            self.major = int(major)
            self.minors = [int(m) for m in minors.split(",")]
        elif kind == "constant":
            since, name, value = rest.split(" ", 2)
            self.constants[name] = (value, since)
        elif kind == "typedef":
            since, name, size, ctype = rest.split(" ", 3)
            self.typedefs[name] = (ctype, int(size), since)
        elif kind == "function":
            since, name, ctype = rest.split(" ", 2)
            self.functions[name] = (ctype, since)
        elif kind == "struct":
            since, name, sizes = rest.split(" ", 2)
            self.struct_since[name] = since
            self.sizes[name] = {}
            for item in sizes.split(","):
                minor, size = item.split("=")
                self.sizes[name][int(minor.split(".")[1])] = int(size)
            self.fields.setdefault(name, [])
        elif kind == "field":
            since, qualified, offset, size, ctype = rest.split(" ", 4)
            struct, field = qualified.split(".")
            self.fields[struct].append((field, int(offset), int(size), ctype, since))
        else:
            raise ValueError("unknown kind " + kind)

    def dump(self):
        out = ["# The plugin ABI layout freeze (x86_64, LP64), written by test/abi/abi_freeze.py",
               "# --update and checked by the abi-freeze and abi-layout-* tests. Never edit a",
               "# line by hand: within a major nothing here may change; a new minor only adds.",
               "#   abi MAJOR MINORS                     the minors this freeze has seen",
               "#   constant SINCE NAME VALUE",
               "#   typedef SINCE NAME SIZE TYPE",
               "#   function SINCE NAME TYPE             (exported; as a pointer type)",
               "#   struct SINCE NAME 1.0=SIZE,1.1=SIZE  its size at each minor",
               "#   field SINCE STRUCT.FIELD OFFSET SIZE TYPE",
               "abi %d %s" % (self.major, ",".join(str(m) for m in self.minors))]
        for name, (value, since) in self.constants.items():
            out.append("constant %s %s %s" % (since, name, value))
        for name, (ctype, size, since) in self.typedefs.items():
            out.append("typedef %s %s %d %s" % (since, name, size, ctype))
        for name, (ctype, since) in self.functions.items():
            out.append("function %s %s %s" % (since, name, ctype))
        for struct, fields in self.fields.items():
            sizes = ",".join("%d.%d=%d" % (self.major, m, s)
                             for m, s in sorted(self.sizes[struct].items()))
            out.append("struct %s %s %s" % (self.struct_since[struct], struct, sizes))
            for field, offset, size, ctype, since in fields:
                out.append("field %s %s.%s %d %d %s" % (since, struct, field, offset, size, ctype))
        return "\n".join(out) + "\n"


# ---- comparing -------------------------------------------------------------------------------

def differences(fr, parsed, measured):
    """Every way the header departs from the freeze, one sentence each. Empty: they agree."""
    sizes, offsets, typedef_sizes = measured
    problems = []
    if fr.major is None:
        return ["the freeze is empty: " + UPDATE_HINT]
    if parsed["major"] != fr.major:
        problems.append("CCM_ABI_MAJOR is %d but the freeze is of major %d: a new major needs "
                        "a new entry symbol and a new freeze" % (parsed["major"], fr.major))
        return problems
    latest = fr.minors[-1]
    if parsed["minor"] < latest:
        problems.append("CCM_ABI_MINOR went back from %d to %d" % (latest, parsed["minor"]))
    elif parsed["minor"] > latest:
        problems.append("CCM_ABI_MINOR is %d but the freeze ends at minor %d: %s" %
                        (parsed["minor"], latest, UPDATE_HINT))
    for name, (value, _) in fr.constants.items():
        if name == "CCM_ABI_MINOR":
            continue
        if name not in parsed["constants"]:
            problems.append("constant %s was removed (frozen as %s)" % (name, value))
        elif parsed["constants"][name] != value:
            problems.append("constant %s changed from %s to %s" %
                            (name, value, parsed["constants"][name]))
    for name in parsed["constants"]:
        if name not in fr.constants:
            problems.append("constant %s is not in the freeze: %s" % (name, UPDATE_HINT))
    for name, (ctype, size, _) in fr.typedefs.items():
        if name not in parsed["typedefs"]:
            problems.append("typedef %s was removed" % name)
        elif typedef_sizes[name] != size:
            problems.append("typedef %s changed size from %d to %d" %
                            (name, size, typedef_sizes[name]))
    for name in parsed["typedefs"]:
        if name not in fr.typedefs:
            problems.append("typedef %s is not in the freeze: %s" % (name, UPDATE_HINT))
    for name in fr.functions:
        if name not in parsed["functions"]:
            problems.append("exported function %s was removed" % name)
    for name in parsed["functions"]:
        if name not in fr.functions:
            problems.append("exported function %s is not in the freeze: %s" % (name, UPDATE_HINT))
    for struct, fields in fr.fields.items():
        if struct not in parsed["structs"]:
            problems.append("struct %s was removed" % struct)
            continue
        header_fields = dict(parsed["structs"][struct])
        for field, offset, size, _, since in fields:
            if field not in header_fields:
                problems.append("%s.%s (since %s) was removed or renamed" % (struct, field, since))
                continue
            now = offsets[(struct, field)]
            if now != (offset, size):
                problems.append("%s.%s (since %s) moved or changed size: offset %d size %d in "
                                "the freeze, offset %d size %d now" %
                                (struct, field, since, offset, size, now[0], now[1]))
        frozen_names = [f[0] for f in fields]
        for field, _ in parsed["structs"][struct]:
            if field not in frozen_names:
                problems.append("%s.%s is not in the freeze: %s" % (struct, field, UPDATE_HINT))
        frozen_size = fr.sizes[struct].get(parsed["minor"])
        if frozen_size is not None and frozen_size != sizes[struct]:
            problems.append("sizeof(%s) is %d but %d in the freeze for minor %d.%d: %s" %
                            (struct, sizes[struct], frozen_size, fr.major, parsed["minor"],
                             UPDATE_HINT))
    for struct in parsed["structs"]:
        if struct not in fr.fields:
            problems.append("struct %s is not in the freeze: %s" % (struct, UPDATE_HINT))
    return problems


def updated(fr, parsed, measured):
    """The freeze with what the header appended. Raises FreezeError for anything that is not
    an append: a changed or removed entry, a field inside a struct's old size, a lower minor."""
    sizes, offsets, typedef_sizes = measured
    if fr.major is not None:
        changes = [p for p in differences(fr, parsed, measured) if UPDATE_HINT not in p]
        if changes:
            raise FreezeError("the header changes what is frozen, which no minor may do:\n  " +
                              "\n  ".join(changes))
    else:
        fr.major = parsed["major"]
    minor = parsed["minor"]
    since = "%d.%d" % (parsed["major"], minor)
    if minor not in fr.minors:
        fr.minors.append(minor)
    for name, value in parsed["constants"].items():
        if name == "CCM_ABI_MINOR":
            fr.constants[name] = (value, fr.constants.get(name, (None, since))[1])
        elif name not in fr.constants:
            fr.constants[name] = (value, since)
    for name, ctype in parsed["typedefs"].items():
        if name not in fr.typedefs:
            fr.typedefs[name] = (ctype, typedef_sizes[name], since)
    for name, ctype in parsed["functions"].items():
        if name not in fr.functions:
            fr.functions[name] = (ctype, since)
    for struct, fields in parsed["structs"].items():
        if struct not in fr.fields:
            fr.fields[struct] = []
            fr.sizes[struct] = {}
            fr.struct_since[struct] = since
        old_sizes = fr.sizes[struct]
        old_size = old_sizes[max(old_sizes)] if old_sizes else 0
        frozen_names = [f[0] for f in fr.fields[struct]]
        for field, ctype in fields:
            if field in frozen_names:
                continue
            offset, size = offsets[(struct, field)]
            if offset < old_size:
                raise FreezeError("%s.%s lies at offset %d, inside the struct's frozen size %d: "
                                  "fields are only appended at the end" %
                                  (struct, field, offset, old_size))
            fr.fields[struct].append((field, offset, size, ctype, since))
        if old_sizes and sizes[struct] < old_size:
            raise FreezeError("sizeof(%s) shrank from %d to %d" % (struct, old_size,
                                                                   sizes[struct]))
        fr.sizes[struct][minor] = sizes[struct]
    return fr


# ---- the generated C test --------------------------------------------------------------------

def minor_of(since):
    return int(since.split(".")[1])


def generate(fr):
    """C11 (and C++) source asserting every entry of the freeze against the header it is
    compiled with. Entries newer than that header's CCM_ABI_MINOR are left out, so the same
    file checks the frozen copy of an older minor's header too."""
    out = ["/* Generated by test/abi/abi_freeze.py from test/abi/abi_freeze.txt: do not edit.",
           " * Every constant, typedef, struct size and field of the ABI freeze, asserted against",
           " * ccm/provider_abi.h at compile time (strings at run time). A failure means the header",
           " * changed something frozen; for an append in a new minor, " +
           "run test/abi/abi_freeze.py --update. */",
           "#include <stddef.h>", "#include <string.h>", "", '#include "ccm/provider_abi.h"', "",
           "#ifdef __cplusplus",
           "#include <type_traits>",
           "#define CCM_FREEZE_ASSERT(cond, msg) static_assert(cond, msg)",
           "#define CCM_FREEZE_SAME_TYPE(expr, T) std::is_same_v<decltype(expr), T>",
           "#else",
           "#define CCM_FREEZE_ASSERT(cond, msg) _Static_assert(cond, msg)",
           "#define CCM_FREEZE_SAME_TYPE(expr, T) _Generic((expr), T: 1, default: 0)",
           "#endif",
           "#define CCM_FREEZE_FIELD(S, f, off, size, T, since)                              \\",
           "  CCM_FREEZE_ASSERT(offsetof(S, f) == (off), #S \".\" #f \" (since \" since \") moved:"
           " frozen at offset \" #off);\\",
           "  CCM_FREEZE_ASSERT(sizeof(((S*)0)->f) == (size), #S \".\" #f \" (since \" since \") "
           "changed size: frozen as \" #size);\\",
           "  CCM_FREEZE_ASSERT(CCM_FREEZE_SAME_TYPE(((S*)0)->f, T), #S \".\" #f \" (since \" since"
           " \") changed type: frozen as \" #T)", "",
           "CCM_FREEZE_ASSERT(sizeof(void*) == 8 && sizeof(size_t) == 8, "
           "\"the freeze is of the LP64 layout\");",
           "CCM_FREEZE_ASSERT(CCM_ABI_MAJOR == %d, \"the freeze is of ABI major %d\");" %
           (fr.major, fr.major),
           "CCM_FREEZE_ASSERT(CCM_ABI_MINOR <= %d, \"the header's minor is newer than the freeze: "
           "run test/abi/abi_freeze.py --update\");" % fr.minors[-1], ""]
    strings = []

    def guarded(since, lines):
        m = minor_of(since)
        if m == 0:
            out.extend(lines)
        else:
            out.append("#if CCM_ABI_MINOR >= %d" % m)
            out.extend(lines)
            out.append("#endif")

    for name, (value, since) in fr.constants.items():
        if name == "CCM_ABI_MINOR":
            continue
        if value.startswith('"'):
            strings.append((name, value, since))
            guarded(since, ["CCM_FREEZE_ASSERT(sizeof(%s) == sizeof(%s), \"%s changed\");" %
                            (name, value, name)])
        else:
            guarded(since, ["CCM_FREEZE_ASSERT(%s == %s, \"%s changed: frozen as %s\");" %
                            (name, value, name, value)])
    for name, (ctype, size, since) in fr.typedefs.items():
        guarded(since, ["CCM_FREEZE_ASSERT(sizeof(%s) == %d, \"typedef %s changed size\");" %
                        (name, size, name),
                        "CCM_FREEZE_ASSERT(CCM_FREEZE_SAME_TYPE((%s)0, %s), \"typedef %s changed "
                        "type: frozen as %s\");" % (name, ctype, name, ctype)])
    for name, (ctype, since) in fr.functions.items():
        guarded(since, ["CCM_FREEZE_ASSERT(CCM_FREEZE_SAME_TYPE(&%s, %s), \"%s changed type: "
                        "frozen as %s\");" % (name, ctype, name, ctype)])
    for struct, fields in fr.fields.items():
        out.append("")
        for minor, size in sorted(fr.sizes[struct].items()):
            out += ["#if CCM_ABI_MINOR == %d" % minor,
                    "CCM_FREEZE_ASSERT(sizeof(%s) == %d, \"sizeof(%s) at minor %d.%d is frozen "
                    "as %d\");" % (struct, size, struct, fr.major, minor, size),
                    "#endif"]
        for field, offset, size, ctype, since in fields:
            guarded(since, ["CCM_FREEZE_FIELD(%s, %s, %d, %d, %s, \"%s\");" %
                            (struct, field, offset, size, ctype, since)])
    out += ["", "int main(void) {", "  int failures = 0;"]
    for name, value, since in strings:
        check = ["  failures += strcmp(%s, %s) != 0;" % (name, value)]
        if minor_of(since) == 0:
            out.extend(check)
        else:
            out += ["#if CCM_ABI_MINOR >= %d" % minor_of(since)] + check + ["#endif"]
    out += ["  return failures == 0 ? 0 : 1;", "}"]
    return "\n".join(out) + "\n"


def compile_generated(fr, header_path, cc=None, cxx=None):
    """Builds and runs the generated test against header_path as C11 and as C++20."""
    include_dir = os.path.dirname(os.path.dirname(os.path.abspath(header_path)))
    with tempfile.TemporaryDirectory(prefix="ccm-abi-") as tmp:
        src = os.path.join(tmp, "freeze_test.c")
        with open(src, "w") as f:
            f.write(generate(fr))
        for lang, tool, std in (("c", cc or compiler("c"), "-std=c11"),
                                ("c++", cxx or compiler("cxx"), "-std=c++20")):
            exe = os.path.join(tmp, "freeze_test_" + lang.replace("+", "x"))
            run(tool, ["-x", lang, std, "-Wall", "-Wextra", "-pedantic", "-Werror",
                       "-I", include_dir, src, "-o", exe])
            result = subprocess.run([exe])
            if result.returncode != 0:
                raise FreezeError("a string constant differs from the freeze (%s build)" % lang)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    mode.add_argument("--generate", metavar="OUT")
    parser.add_argument("--header", default=DEFAULT_HEADER)
    parser.add_argument("--freeze", default=DEFAULT_FREEZE)
    args = parser.parse_args(argv)
    try:
        fr = Freeze.load(args.freeze)
        if args.generate:
            if fr.major is None:
                raise FreezeError("%s is empty or missing" % args.freeze)
            text = generate(fr)
            old = open(args.generate).read() if os.path.exists(args.generate) else None
            if text != old:
                with open(args.generate, "w") as f:
                    f.write(text)
            return 0
        parsed = parse_header(args.header)
        measured = measure(args.header, parsed)
        if args.update:
            text = updated(fr, parsed, measured).dump()
            with open(args.freeze, "w") as f:
                f.write(text)
            print("%s now freezes ABI %d.%d" % (args.freeze, parsed["major"], parsed["minor"]))
            return 0
        problems = differences(fr, parsed, measured)
        if problems:
            print("%s disagrees with %s:" % (args.header, args.freeze), file=sys.stderr)
            for p in problems:
                print("  - " + p, file=sys.stderr)
            return 1
        compile_generated(fr, args.header)
        entries = sum(len(f) for f in fr.fields.values())
        print("ABI %d.%d matches the freeze: %d constants, %d typedefs, %d structs, %d fields" %
              (parsed["major"], parsed["minor"], len(fr.constants), len(fr.typedefs),
               len(fr.fields), entries))
        return 0
    except FreezeError as e:
        print("abi_freeze: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
