"""The plugin ABI version as the header states it (the one place it is written), so tests
that check what the host prints follow the header instead of repeating the number."""
import os
import re

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plugin-sdk",
                      "include", "ccm", "provider_abi.h")


def abi_version():
    """(major, minor) from CCM_ABI_MAJOR / CCM_ABI_MINOR in ccm/provider_abi.h."""
    with open(HEADER, encoding="utf-8") as f:
        text = f.read()
    major = re.search(r"^#define CCM_ABI_MAJOR (\d+)$", text, re.M)
    minor = re.search(r"^#define CCM_ABI_MINOR (\d+)$", text, re.M)
    return int(major.group(1)), int(minor.group(1))


def abi_text():
    """"1.1" for ABI 1.1."""
    return "%d.%d" % abi_version()
