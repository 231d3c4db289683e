#!/usr/bin/env bash
# Builds the Python package into a fresh virtual environment and runs its tests with pytest.
#
#   crates/curator-py/run-tests.sh [pytest arguments]
#
# PYTHON picks the interpreter (python3), CURATOR_PY_VENV the environment's directory (a
# new temporary one; an existing directory there is replaced), CURATOR_PY_EXTRAS the
# optional packages to test with (langchain-core openai-agents). Cargo builds into
# CARGO_TARGET_DIR when it is set, else into the workspace's target/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
venv="${CURATOR_PY_VENV:-$(mktemp -d)/venv}"

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# The optional integrations the tests cover (space-separated; empty to leave them out, and
# their tests are skipped).
read -r -a extras <<< "${CURATOR_PY_EXTRAS-langchain-core openai-agents}"
"$venv/bin/python" -m pip install --quiet "maturin>=1.9.4,<2" pytest ${extras[@]+"${extras[@]}"}
"$venv/bin/python" -m pip install --quiet "$here"
# pytest runs from the tests folder, so that `curator_context` is the installed package and
# not the source folder `python/`.
cd "$here/tests"
"$venv/bin/python" -m pytest -q "$@"
