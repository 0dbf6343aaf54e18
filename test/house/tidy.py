#!/usr/bin/env python3
"""clang-tidy over every first-party source the build compiles that ships or is shared test
code (host/, kubesim/, plugins/, plugin-sdk/, test/support/, tools/), with the checks of
.clang-tidy.
Fails on any warning or error and prints each one. Sources run in parallel, one per core.

A file whose compile command, included first-party files and .clang-tidy are unchanged since
it last passed is not checked again (the cache is in the build directory, so a fresh build,
such as CI's, checks everything; it is saved as files pass, so an interrupted run resumes).

usage: tidy.py BUILD_DIR [ROOT...]      (ROOT defaults to the list above)"""
import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys

SOURCE = os.environ.get("CCM_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
ROOTS = ("host/", "kubesim/", "plugins/", "plugin-sdk/", "test/support/", "tools/")


def first_party_deps(build, outputs):
    """{object: [first-party files it was built from]} as ninja recorded them."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps", *outputs], capture_output=True,
                         text=True, check=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            current = line.split(":")[0]
            deps[current] = []
        elif line.strip() and current is not None:
            path = os.path.normpath(os.path.join(build, line.strip()))
            if path.startswith(SOURCE + os.sep):
                deps[current].append(path)
    return deps


def key_of(entry, deps, config):
    h = hashlib.sha256(entry["command"].encode())
    h.update(config)
    for path in sorted(deps):
        h.update(path.encode())
        try:
            with open(path, "rb") as f:
                h.update(f.read())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()


def tidy(tool, build, entry):
    # The compiler's own warnings are the build's business (gcc, -Werror); clang would add
    # some of its own about third-party headers (RapidJSON's iterators under C++20).
    r = subprocess.run([tool, "-p", build, "--quiet", "--extra-arg=-w", "--extra-arg=-Wno-error",
                        entry["file"]], cwd=entry["directory"], capture_output=True, text=True)
    lines = [l for l in (r.stdout + r.stderr).splitlines()
             if " warning: " in l or " error: " in l]
    if r.returncode != 0 and not lines:
        lines = [f"{entry['file']}: clang-tidy exited {r.returncode}: {r.stderr.strip()[:500]}"]
    return lines


def save(path, cache):
    """Written after every file that passes, so an interrupted run (a timeout, ^C) keeps what
    it checked and the next run resumes there."""
    with open(path + ".tmp", "w") as f:
        json.dump(cache, f)
    os.replace(path + ".tmp", path)


def main():
    build = os.path.abspath(sys.argv[1])
    roots = tuple(sys.argv[2:]) or ROOTS
    tool = shutil.which("clang-tidy") or shutil.which("clang-tidy-14")
    if tool is None:
        print("tidy: clang-tidy is not installed (Debian package clang-tidy; ./dev installs it)")
        return 1
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    entries, seen = [], set()
    for e in commands:
        path = os.path.normpath(os.path.join(e["directory"], e["file"]))
        rel = os.path.relpath(path, SOURCE)
        if rel.startswith(roots) and rel not in seen:
            seen.add(rel)
            entries.append(dict(e, file=path, rel=rel))
    with open(os.path.join(SOURCE, ".clang-tidy"), "rb") as f:
        config = f.read()
    deps = first_party_deps(build, [e["output"] for e in entries])
    cache_path = os.path.join(build, "tidy-cache.json")
    try:
        with open(cache_path) as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    keys = {e["rel"]: key_of(e, deps.get(e["output"], [e["file"]]), config) for e in entries}
    todo = [e for e in entries if cache.get(e["rel"]) != keys[e["rel"]]]
    print(f"tidy: {len(entries)} sources, {len(entries) - len(todo)} unchanged since they passed, "
          f"checking {len(todo)}", flush=True)
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for e, lines in zip(todo, pool.map(lambda e: tidy(tool, build, e), todo)):
            if lines:
                failures += 1
                print("\n".join(lines), flush=True)
            else:
                cache[e["rel"]] = keys[e["rel"]]
                save(cache_path, cache)
    print(f"tidy: {failures} of {len(entries)} sources have findings")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
