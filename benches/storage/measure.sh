#!/usr/bin/env bash
# Bytes on disk per message: curator's SQLite and PostgreSQL stores against LangGraph's
# SQLite checkpointer and the OpenAI Agents SDK's SQLiteSession, on the same conversations
# (the shared corpus), each store vacuumed. The peers run when a Python 3 is present (in a
# virtual environment of their own, from the package index); PostgreSQL when Debian's
# postgresql package is installed. Prints a Markdown table.
#
# Usage: bash benches/storage/measure.sh [CORPUS_DIR]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
corpus="${1:-$root/../shared/corpus}"
work="$(mktemp -d)"
trap 'pg_stop; rm -rf "$work"' EXIT
pg_stop() { if [[ -n "${pg_bin:-}" && -d "$work/pg" ]]; then "$pg_bin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true; fi; }

cargo build --release -q -p curator-cli --manifest-path "$root/Cargo.toml"
curator="$root/target/release/curator"
rows=()

# curator, SQLite: every conversation recorded, then vacuumed.
"$curator" replay "$corpus" --db "$work/curator.db" --max-tokens 32000 >/dev/null
python3 - "$work/curator.db" > "$work/sqlite.json" <<'PY'
import json, os, sqlite3, sys
path = sys.argv[1]
conn = sqlite3.connect(path)
messages = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
conn.execute("VACUUM"); conn.execute("PRAGMA wal_checkpoint(TRUNCATE)"); conn.close()
size = sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm") if os.path.exists(path + s))
print(json.dumps({"store": "curator SqliteStore", "bytes": size, "messages": messages}))
PY
rows+=("$(cat "$work/sqlite.json")")

# curator, PostgreSQL: a server of its own on a free loopback port.
pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
if [[ -n "$pg_bin" && -x "$pg_bin/initdb" ]]; then
  if [[ "$(id -u)" == 0 ]]; then run_pg() { su postgres -s /bin/bash -c "$*"; }; chmod 777 "$work"; else run_pg() { bash -c "$*"; }; fi
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  run_pg "'$pg_bin/initdb' -D '$work/pg' -U curator --auth=trust >/dev/null"
  run_pg "'$pg_bin/pg_ctl' -D '$work/pg' -o '-p $port -k $work -h 127.0.0.1' -w start >/dev/null"
  url="postgres://curator@127.0.0.1:$port/postgres"
  "$curator" replay "$corpus" --db "$url" --max-tokens 32000 >/dev/null
  psql() { "$pg_bin/psql" -X -q -t -A "$url" -c "$1"; }
  psql "VACUUM FULL" >/dev/null 2>&1 || true
  messages="$(psql "SELECT count(*) FROM curator.entries")"
  bytes="$(psql "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'curator' AND c.relkind = 'r'")"
  rows+=("{\"store\": \"curator PgStore (tables, indexes, TOAST)\", \"bytes\": $bytes, \"messages\": $messages}")
else
  echo "PostgreSQL is not installed: its row is left out" >&2
fi

# The peers.
if command -v python3 >/dev/null; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q langgraph langgraph-checkpoint-sqlite openai-agents >/dev/null
  while IFS= read -r line; do rows+=("$line"); done < <("$work/venv/bin/python" "$here/peers.py" "$corpus" "$work")
fi

printf '%s\n' "${rows[@]}" > "$work/rows.jsonl"
python3 - "$work/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
raw = next(r for r in rows if r["store"] == "the messages as JSON")
print("| store | messages | bytes on disk | bytes per message | on disk / the messages as JSON |")
print("|---|---:|---:|---:|---:|")
for r in rows:
    per = r["bytes"] / max(r["messages"], 1)
    note = " ({} not stored)".format(r["skipped"]) if r.get("skipped") else ""
    ratio = r["bytes"] / raw["bytes"]
    print("| {}{} | {:,} | {:,} | {:,.0f} | {:.2f} |".format(r["store"], note, r["messages"], r["bytes"], per, ratio))
PY
