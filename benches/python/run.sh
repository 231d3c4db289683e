#!/usr/bin/env bash
# The Python benchmarks, in one process each, against the package built from this checkout:
#
#   benches/python/run.sh OUT_DIR [--quick]
#
# Makes (or reuses) a virtual environment under the cargo target directory with maturin,
# langchain-core, langchain and openai-agents from the package index, installs
# `curator-context` from crates/curator-py (a release build), and writes
# OUT_DIR/python.json (bench_curate.py), OUT_DIR/python_pair_safe.json (pair_safe.py),
# OUT_DIR/python_session.json (bench_session.py), OUT_DIR/python_shorten.json
# (bench_shorten.py) and OUT_DIR/python_agents.json (bench_agents.py). `cargo xtask bench` runs it
# when a python3 is found. PYTHON picks the interpreter (python3).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:?usage: run.sh OUT_DIR [--quick]}"
quick="${2:-}"
python="${PYTHON:-python3}"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="$target/python-bench-venv"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
fi
"$venv/bin/python" -m pip install --quiet "maturin>=1.9.4,<2" langchain-core langchain openai-agents
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$root/crates/curator-py"

mkdir -p "$out"
if [ "$quick" = "--quick" ]; then
    sizes="1000,10000"; seconds="0.3"
else
    sizes="1000,10000,100000"; seconds="1.5"
fi
"$venv/bin/python" "$here/bench_curate.py" --sizes "$sizes" --seconds "$seconds" --json "$out/python.json"
# The pure-Python pair-safe reference, on the data the strategies bench wrote, against the
# criterion report of the same sitting.
if [ -f "$here/pair_safe.py" ]; then
    if [ "$quick" = "--quick" ]; then iterations=5000; else iterations=20000; fi
    "$venv/bin/python" "$here/pair_safe.py" "$out/pair_safe_data.json" "$target/criterion" \
        --iterations "$iterations" --json "$out/python_pair_safe.json"
fi
if [ -f "$here/bench_session.py" ]; then
    "$venv/bin/python" "$here/bench_session.py" --sizes "$sizes" --json "$out/python_session.json"
fi
if [ -f "$here/bench_shorten.py" ]; then
    if [ "$quick" = "--quick" ]; then rounds=2; else rounds=5; fi
    "$venv/bin/python" "$here/bench_shorten.py" --rounds "$rounds" --json "$out/python_shorten.json"
fi
if [ -f "$here/bench_agents.py" ]; then
    if [ "$quick" = "--quick" ]; then runs=1; else runs=5; fi
    "$venv/bin/python" "$here/bench_agents.py" --runs "$runs" --json "$out/python_agents.json"
fi
