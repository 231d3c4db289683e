"""The Python examples of the docs (``docs/python.md``, ``docs/python-sessions.md``, the
README and the package's README), for ``test_docs.py`` to run and ``run-tests.sh`` to type-check.

    python _examples.py OUT_DIR   # writes each example to OUT_DIR/<doc>_<line>.py
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
DOCS = ("docs/python.md", "docs/python-sessions.md", "README.md", "crates/curator-py/README.md")
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks():
    """Every ```python block of the docs: (name, source), the name the doc and the block's
    first line (``docs_python_md_23``)."""
    out = []
    for doc in DOCS:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            name = re.sub(r"\W", "_", doc) + f"_{line}"
            out.append((name, match.group(1)))
    return out


if __name__ == "__main__":
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name, source in blocks():
        with open(os.path.join(out_dir, f"{name}.py"), "w", encoding="utf-8") as f:
            f.write(source)
