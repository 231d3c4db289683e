#!/usr/bin/env bash
# Builds the Python package's abi3 wheel, installs it into a fresh virtual environment with
# no Rust toolchain on PATH, runs its tests with pytest, then type-checks the package and the
# docs' examples with mypy --strict and pyright.
#
#   crates/curator-py/run-tests.sh [pytest arguments]
#
# PYTHON picks the interpreter (python3), CURATOR_PY_VENV the environment's directory (a
# new temporary one; an existing directory there is replaced), CURATOR_PY_EXTRAS the
# optional packages to test with (langchain-core langchain langchain-openai openai-agents;
# empty to leave them out, and their tests are skipped outside CI). Cargo builds into
# CARGO_TARGET_DIR when it is set, else into the workspace's target/, with the cargo profile
# CURATOR_PY_PROFILE: `dev` (the default: CI builds the workspace's tests in that profile
# first, so the wheel reuses most of what they compiled; the same code, unoptimised) or
# `release` (what `pip install` builds, about 15 minutes from scratch on 2 cores). pyright is
# installed with npm into CURATOR_PY_NODE (~/.cache/curator-py-node) when it is not there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
venv="${CURATOR_PY_VENV:-$(mktemp -d)/venv}"
build_venv="$(mktemp -d)/build-venv"
wheels="$(mktemp -d)"
examples="$(mktemp -d)"
trap 'rm -rf "$build_venv" "$wheels" "$examples"' EXIT

profile="${CURATOR_PY_PROFILE:-dev}"
echo "-- building the wheel, profile $profile (cargo's progress follows)"
"$python" -m venv "$build_venv"
"$build_venv/bin/python" -m pip install --quiet --upgrade pip
"$build_venv/bin/python" -m pip install --quiet "maturin>=1.9.4,<2"
"$build_venv/bin/maturin" build --profile "$profile" -m "$here/Cargo.toml" --out "$wheels"
wheel="$(ls "$wheels"/curator_context-*-abi3-*.whl)"

# A PATH without the Rust toolchain: what a machine that only installs the wheel has.
no_rust_path=""
IFS=: read -r -a dirs <<< "$PATH"
for dir in "${dirs[@]}"; do
    if [ -x "$dir/cargo" ] || [ -x "$dir/rustc" ]; then
        continue
    fi
    no_rust_path="${no_rust_path:+$no_rust_path:}$dir"
done

echo "-- installing $(basename "$wheel") into a fresh environment with no Rust on PATH"
rm -rf "$venv"
"$python" -m venv "$venv"
read -r -a extras <<< "${CURATOR_PY_EXTRAS-langchain-core langchain langchain-openai openai-agents}"
PATH="$no_rust_path" bash -c '
    set -euo pipefail
    if command -v cargo >/dev/null 2>&1 || command -v rustc >/dev/null 2>&1; then
        echo "a Rust toolchain is still on PATH" >&2
        exit 1
    fi
    "$1/bin/python" -m pip install --quiet --upgrade pip
    "$1/bin/python" -m pip install --quiet "$2" pytest mypy "${@:3}"
' _ "$venv" "$wheel" ${extras[@]+"${extras[@]}"}

echo "-- pytest"
# pytest runs from the tests folder, so that `curator_context` is the installed package and
# not the source folder `python/`.
(cd "$here/tests" && PATH="$no_rust_path" "$venv/bin/python" -m pytest -q "$@")

if [ ${#extras[@]} -eq 0 ]; then
    echo "-- no optional packages (CURATOR_PY_EXTRAS is empty): the type checks, which check the package against them, are skipped"
    exit 0
fi
echo "-- mypy --strict and pyright on the package and the docs' examples"
"$venv/bin/python" "$here/tests/_examples.py" "$examples"
# The installed package (its extension and stubs, as users get them), then the examples.
installed="$("$venv/bin/python" -c 'import curator_context, os; print(os.path.dirname(curator_context.__file__))')"
(cd "$examples" && "$venv/bin/python" -m mypy --strict -p curator_context)
(cd "$examples" && "$venv/bin/python" -m mypy --strict .)
node_dir="${CURATOR_PY_NODE:-$HOME/.cache/curator-py-node}"
if [ ! -x "$node_dir/node_modules/.bin/pyright" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "pyright needs npm (Node.js); install it, or set CURATOR_PY_NODE to a folder holding pyright" >&2
        exit 1
    fi
    npm install --silent --prefix "$node_dir" pyright@1.1.414
fi
pyright="$node_dir/node_modules/.bin/pyright"
"$pyright" --pythonpath "$venv/bin/python" "$installed"
"$pyright" --pythonpath "$venv/bin/python" "$examples"
echo "-- the Python package: all checks passed ($root)"
