#!/usr/bin/python3
"""Checks that a provider plugin exports exactly one dynamic symbol: ccm_provider_entry_v1."""
import subprocess
import sys


def main():
    out = subprocess.run(["nm", "-D", "--defined-only", sys.argv[1]], check=True,
                         capture_output=True, text=True).stdout
    symbols = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    if symbols != ["ccm_provider_entry_v1"]:
        print("unexpected exports: %s" % symbols)
        return 1
    print("exports: %s" % symbols)
    return 0


if __name__ == "__main__":
    sys.exit(main())
