#!/usr/bin/env python3
"""docs/writing-a-provider.md must quote the minimal C provider exactly as it is built and
tested, so the documented example never drifts from working code."""
import os
import sys

src = os.environ["CCM_SOURCE_DIR"]
doc = open(os.path.join(src, "docs", "writing-a-provider.md")).read()
example = open(os.path.join(src, "plugin-sdk", "examples", "minimal-c", "minimal.c")).read()
if "```c\n" + example + "```" not in doc:
    sys.exit("docs/writing-a-provider.md does not contain plugin-sdk/examples/minimal-c/minimal.c "
             "verbatim: update the document")
print("the guide quotes the example verbatim")
