"""Bytes on disk per message for the peers' stores, on the same conversations as curator.

Records every conversation of the corpus message by message, as an agent loop persists
it: the OpenAI Agents SDK's `SQLiteSession` (one `add_items` per message) and LangGraph's
`SqliteSaver` checkpointer (one graph run per message on a `MessagesState` thread, so a
checkpoint after each). Then `VACUUM`, and prints one JSON line per store.

Usage: python peers.py CORPUS_DIR OUT_DIR
"""

import asyncio
import json
import os
import sqlite3
import sys


def conversations(corpus):
    for name in sorted(os.listdir(corpus)):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(corpus, name), encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    record = json.loads(line)
                    yield record["id"], record["messages"]


def vacuumed_size(path):
    conn = sqlite3.connect(path)
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    size = os.path.getsize(path)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            size += os.path.getsize(path + suffix)
    return size


async def agents_sdk(corpus, out):
    from agents import SQLiteSession

    path = os.path.join(out, "agents_sdk.db")
    messages = 0
    for conversation_id, conversation in conversations(corpus):
        session = SQLiteSession(conversation_id, path)
        for message in conversation:
            await session.add_items([message])
            messages += 1
        session.close()
    return {"store": "OpenAI Agents SDK SQLiteSession", "bytes": vacuumed_size(path), "messages": messages}


def langgraph(corpus, out):
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    def step(state):
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    path = os.path.join(out, "langgraph.db")
    conn = sqlite3.connect(path, check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    messages = 0
    skipped = 0
    for conversation_id, conversation in conversations(corpus):
        config = {"configurable": {"thread_id": conversation_id}}
        for message in conversation:
            try:
                graph.invoke({"messages": [message]}, config)
                messages += 1
            except Exception:  # a message LangChain cannot read: counted, not stored
                skipped += 1
    conn.close()
    return {
        "store": "LangGraph SqliteSaver",
        "bytes": vacuumed_size(path),
        "messages": messages,
        "skipped": skipped,
    }


def main():
    corpus, out = sys.argv[1], sys.argv[2]
    raw = sum(len(json.dumps(m)) for _, c in conversations(corpus) for m in c)
    print(json.dumps({"store": "the messages as JSON", "bytes": raw, "messages": sum(len(c) for _, c in conversations(corpus))}))
    print(json.dumps(asyncio.run(agents_sdk(corpus, out))))
    print(json.dumps(langgraph(corpus, out)))


if __name__ == "__main__":
    main()
