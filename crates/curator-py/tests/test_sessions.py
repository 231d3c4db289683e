"""Sessions on curator's stores: the Agents SDK session and the LangChain history, on SQLite
and PostgreSQL."""

import asyncio
import copy
import uuid

import pytest

from curator_context import BudgetTooSmall, ConfigError, CuratorError, FormatError, StoreError
from curator_context._native import ItemSession
from curator_context.agents import CuratorSession


def run(coroutine):
    return asyncio.run(coroutine)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    """Where sessions are recorded: a SQLite file, or a PostgreSQL server started for the run."""
    if request.param == "sqlite":
        return str(tmp_path / "sessions.db")
    return request.getfixturevalue("postgres_url")


def new_id():
    return f"session-{uuid.uuid4()}"


def agent_items(rounds=3, size=20):
    """Items as the Agents SDK stores them: messages with parts, reasoning, calls, outputs."""
    items = [
        {"content": "You are a shell agent.", "role": "developer"},
        {"role": "user", "content": [{"type": "input_text", "text": "Find the biggest log file."}]},
    ]
    for i in range(rounds):
        items.append(
            {
                "id": f"rs_{i}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": f"look in {i}"}],
                "encrypted_content": "gAAAAB" + "x" * 40,
            }
        )
        items.append(
            {
                "arguments": f'{{"dir": "/var/log/{i}"}}',
                "call_id": f"call_{i}",
                "name": "du",
                "type": "function_call",
                "id": f"fc_{i}",
                "status": "completed",
            }
        )
        items.append({"call_id": f"call_{i}", "output": f"{i} blocks " * size, "type": "function_call_output"})
    items.append(
        {
            "id": "msg_1",
            "content": [{"annotations": [], "text": "The biggest is /var/log/2.", "type": "output_text", "logprobs": []}],
            "role": "assistant",
            "status": "completed",
            "type": "message",
        }
    )
    return items


def test_items_round_trip_unchanged(store):
    items = agent_items()
    given = copy.deepcopy(items)
    session = CuratorSession(new_id(), store)
    run(session.add_items(items[:3]))
    run(session.add_items(items[3:]))
    assert items == given, "add_items left its input alone"
    assert run(session.get_items()) == items
    for limit in (0, 1, 2, 5, len(items), len(items) + 3):
        assert run(session.get_items(limit)) == (items[-limit:] if limit else [])
    # Another session object (as another process) loads the same from the store.
    again = CuratorSession(session.session_id, store)
    assert run(again.get_items()) == items
    assert len(again._native) == len(items)


def test_sessions_are_kept_apart_by_id(store):
    a, b = CuratorSession(new_id(), store), CuratorSession(new_id(), store)
    run(a.add_items([{"role": "user", "content": "a"}]))
    run(b.add_items([{"role": "user", "content": "b"}]))
    assert run(a.get_items()) == [{"role": "user", "content": "a"}]
    assert run(b.get_items()) == [{"role": "user", "content": "b"}]


def test_pop_and_clear(store):
    items = agent_items(rounds=2)
    session = CuratorSession(new_id(), store)
    assert run(session.pop_item()) is None
    run(session.add_items(items))
    assert run(session.pop_item()) == items[-1]
    assert run(session.pop_item()) == items[-2]
    assert run(session.get_items()) == items[:-2]
    assert run(CuratorSession(session.session_id, store).get_items()) == items[:-2]
    run(session.clear_session())
    assert run(session.get_items()) == []
    assert run(CuratorSession(session.session_id, store).get_items()) == []
    run(session.add_items(items[:2]))
    assert run(CuratorSession(session.session_id, store).get_items()) == items[:2]


def test_two_session_objects_see_each_others_writes(store):
    items = agent_items(rounds=2)
    first = CuratorSession(new_id(), store)
    second = CuratorSession(first.session_id, store)
    run(first.add_items(items[:4]))
    run(second.add_items(items[4:6]))
    run(first.add_items(items[6:]))
    assert run(first.get_items()) == items
    assert run(second.get_items()) == items


def _valid(items):
    """Every function_call_output answers a call shown before it, every call is answered,
    and every reasoning item recorded right before a shown item is shown with it."""
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    assert calls == outputs


def test_a_budget_curates_what_get_items_hands_the_runner(store):
    items = agent_items(rounds=60, size=150)
    session = CuratorSession(new_id(), store, max_tokens=2_000)
    run(session.add_items(items))
    view = run(session.get_items())
    assert len(view) < len(items) / 2
    _valid(view)
    assert view[:2] == items[:2], "the system message and the task are kept"
    assert view[-1] == items[-1]
    # Reasoning stays with the call after it.
    for k, item in enumerate(view):
        if item.get("type") == "function_call":
            assert view[k - 1].get("type") == "reasoning" and view[k - 1]["id"] == "rs_" + item["id"][3:]
    # The limit reads the record as it is, for the SDK's checks of the session's tail.
    assert run(session.get_items(limit=4)) == items[-4:]
    # Items are recorded whole: a session without a pipeline gives them all back.
    assert run(CuratorSession(session.session_id, store).get_items()) == items


def test_a_pipeline_as_a_dict_or_toml(tmp_path):
    store = str(tmp_path / "s.db")
    items = agent_items(rounds=10)
    window = CuratorSession(new_id(), store, pipeline={"strategy": "sliding_window", "window_size": 4})
    run(window.add_items(items))
    view = run(window.get_items())
    assert view[-1] == items[-1] and len(view) < len(items)
    _valid(view)
    toml = CuratorSession(window.session_id, store, pipeline='strategy = "sliding_window"\nwindow_size = 4\n')
    assert run(toml.get_items()) == view


def test_errors_name_what_was_wrong(tmp_path):
    store = str(tmp_path / "s.db")
    session = CuratorSession(new_id(), store)
    with pytest.raises(FormatError) as bad:
        run(session.add_items([{"role": "user", "content": "ok"}, {"type": "function_call", "call_id": "c", "arguments": "{}"}]))
    assert bad.value.kind == "missing_field" and "item 1" in str(bad.value) and "name" in str(bad.value)
    assert run(session.get_items()) == [], "nothing of a refused batch is recorded"
    with pytest.raises(FormatError) as bad:
        run(session.add_items([{"role": "user", "content": object()}]))
    assert bad.value.kind == "wrong_type" and "items[0].content" in str(bad.value)
    with pytest.raises(FormatError):
        run(session.add_items({"role": "user"}))
    with pytest.raises(ConfigError) as bad:
        CuratorSession(new_id(), store, pipeline={"strategy": "no_such_strategy"})
    assert bad.value.kind == "config"
    with pytest.raises(ConfigError):
        CuratorSession(new_id(), store, max_tokens=100, pipeline={"strategy": "sliding_window", "window_size": 2})
    with pytest.raises(StoreError) as bad:
        CuratorSession("", store)
    assert bad.value.kind == "bad_key"
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello, not a database\n" * 100)
    with pytest.raises(StoreError) as bad:
        CuratorSession(new_id(), str(not_a_db))
    assert isinstance(bad.value, CuratorError) and bad.value.kind == "not_a_database"
    tiny = CuratorSession(new_id(), store, max_tokens=10)
    run(tiny.add_items(agent_items()))
    with pytest.raises(BudgetTooSmall):
        run(tiny.get_items())


def test_an_unreachable_database_is_a_store_error():
    with socket_closed_port() as port:
        with pytest.raises(StoreError) as bad:
            CuratorSession(new_id(), f"postgres://curator@127.0.0.1:{port}/postgres?connect_timeout=2")
    assert bad.value.kind == "unavailable" and "connecting" in str(bad.value)


class socket_closed_port:
    """A loopback port nothing listens on."""

    def __enter__(self):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc):
        return False


def test_native_session_format_is_checked(tmp_path):
    with pytest.raises(ConfigError) as bad:
        ItemSession("x", str(tmp_path / "s.db"), format="xml")
    assert bad.value.kind == "invalid_argument"


_WRITER = """
import asyncio, os, sys, time
from curator_context.agents import CuratorSession

async def main(db, session_id, name, count):
    session = CuratorSession(session_id, db)
    # Both writers start appending at once.
    while not os.path.exists(sys.argv[5]):
        time.sleep(0.001)
    for i in range(count):
        await session.add_items([{"role": "user", "content": f"{name} {i}"}])
    print(len(await session.get_items()))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


def test_two_processes_appending_to_one_session_lose_nothing(store, tmp_path):
    import subprocess
    import sys

    db, session_id, count = store, new_id(), 60
    go = str(tmp_path / "go")
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, db, session_id, name, str(count), go], stdout=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    import time

    time.sleep(1.0)
    open(go, "w").close()
    for writer in writers:
        out, _ = writer.communicate(timeout=120)
        assert writer.returncode == 0
        assert int(out) >= count
    got = [item["content"] for item in run(CuratorSession(session_id, db).get_items())]
    assert len(got) == 2 * count
    # How far the appends interleaved depends on the scheduler (usually they do, many
    # times); the sequence rule orders them whatever it is, and none is lost.
    print("switches between the writers:", sum(1 for x, y in zip(got, got[1:]) if x[0] != y[0]))
    for name in ("a", "b"):
        assert [c for c in got if c.startswith(name)] == [f"{name} {i}" for i in range(count)]


def test_items_no_provider_takes_are_said_when_the_view_leaves_them_out(tmp_path):
    import warnings

    from curator_context import UnsendableWarning

    session = CuratorSession(new_id(), str(tmp_path / "s.db"), max_tokens=4_000)
    orphan = {"type": "function_call_output", "call_id": "nobody", "output": "?"}
    run(session.add_items([{"role": "user", "content": "go"}, orphan]))
    with pytest.warns(UnsendableWarning, match=r"1 item\(s\) of session `session-.*` \(at 1\)"):
        view = run(session.get_items())
    assert view == [{"role": "user", "content": "go"}]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsendableWarning)
        # The items as recorded hold it: nothing is left out, nothing said.
        assert run(session.get_items(limit=5))[-1] == orphan
        assert run(CuratorSession(session.session_id, str(tmp_path / "s.db")).get_items())[-1] == orphan
        with pytest.raises(UnsendableWarning):
            run(session.get_items())


def _mutate_every_container(value):
    """Changes every dict and list in `value`, as a caller (or the SDK) may."""
    if isinstance(value, dict):
        for child in list(value.values()):
            _mutate_every_container(child)
        value["mutated"] = True
    elif isinstance(value, list):
        for child in list(value):
            _mutate_every_container(child)
        value.append("mutated")


@pytest.mark.parametrize(
    "curation",
    [{"max_tokens": 2_000}, {"pipeline": {"strategy": "token_budget", "max_tokens": 2_000}}],
    ids=["default", "token_budget"],
)
def test_each_curated_view_is_made_of_fresh_objects(store, curation):
    items = agent_items(rounds=40, size=60)
    session = CuratorSession(new_id(), store, **curation)
    run(session.add_items(items))
    first = run(session.get_items())
    expected = copy.deepcopy(first)
    assert 2 < len(first) < len(items)
    for _ in range(3):
        _mutate_every_container(first)
        again = run(session.get_items())
        assert again == expected, "a caller's changes never reach the next view"
        assert all(a is not b for a, b in zip(first, again))
        first = again
    # Views after an add hold the new items, and the kept ones unchanged.
    more = agent_items(rounds=2, size=60)[2:]
    run(session.add_items(more))
    view = run(session.get_items())
    assert view[-len(more):] == more
    _valid(view)


def test_an_unchanged_view_is_handed_out_again_without_a_worker_thread(store, tmp_path):
    """While nothing is recorded, ``get_items()`` hands out fresh copies of the last view
    after one read of SQLite's change stamp, on the caller's thread; anything recorded since
    (by this session, another object or another process), another reserve, or a store
    without change stamps sends the call to a worker thread, which reads and curates."""
    import subprocess
    import sys

    session = CuratorSession(new_id(), store, max_tokens=2_000)
    native = session._session()
    assert native.get_items_unchanged() is None, "nothing loaded yet"
    run(session.add_items(agent_items(rounds=20, size=60)))
    view = run(session.get_items())
    again = native.get_items_unchanged()
    if store.startswith("postgres"):
        assert again is None, "PostgreSQL has no change stamp: every call reads"
        return
    assert again is not None and again == (view, None)
    assert all(a is not b for a, b in zip(again[0], view))
    assert native.get_items_unchanged(reserve=300) is None, "another view"
    more = agent_items(rounds=2, size=60)[2:]
    run(session.add_items(more))
    assert native.get_items_unchanged() is None, "recorded since"
    view = run(session.get_items())
    assert view[-len(more):] == more
    assert native.get_items_unchanged() == (view, None)
    # Another process appends: the stamp changes, and the next call reads what it wrote.
    writer = "import asyncio, sys\nfrom curator_context.agents import CuratorSession\n" \
        "asyncio.run(CuratorSession(sys.argv[2], sys.argv[1]).add_items([{'role': 'user', 'content': 'from afar'}]))"
    subprocess.run([sys.executable, "-c", writer, store, session.session_id], check=True, timeout=60)
    assert native.get_items_unchanged() is None
    assert run(session.get_items())[-1] == {"role": "user", "content": "from afar"}


def test_a_curated_view_follows_another_session_objects_pops_and_clears(store):
    items = agent_items(rounds=20, size=60)
    pipeline = {"strategy": "token_budget", "max_tokens": 1_000}
    # On SQLite, two objects naming one file share its connection: the other's commits are
    # this connection's own.
    curated = CuratorSession(new_id(), store, pipeline=pipeline)
    other = CuratorSession(curated.session_id, store)

    def check():
        view = run(curated.get_items())
        assert view == run(curated.get_items())
        # The same as a session object opened now, which reads everything.
        assert view == run(CuratorSession(curated.session_id, store, pipeline=pipeline).get_items())
        return view

    run(other.add_items(items))
    assert check()[-1] == items[-1]
    assert run(other.pop_item()) == items[-1]
    assert check()[-1] == items[-2]
    assert run(other.pop_item()) == items[-2]
    assert items[-2] not in check()
    run(other.clear_session())
    assert check() == []
    run(other.add_items(items[:2]))
    assert check() == items[:2]


def _reasoning_followed(items):
    """The Responses API's rule: a reasoning item is directly followed by an item on the
    assistant's side (a call, or an assistant message)."""
    for k, item in enumerate(items):
        if item.get("type") == "reasoning":
            after = items[k + 1] if k + 1 < len(items) else None
            assert after is not None and (
                after.get("type") == "function_call" or after.get("role") == "assistant"
            ), f"reasoning item {item['id']} is followed by {after}"


@pytest.mark.parametrize("closed", [False, True])
def test_a_reasoning_item_whose_calls_the_view_leaves_out_is_left_out_too(tmp_path, closed):
    # As a run stopped for a tool's approval records them: reasoning and a call, no output
    # yet; then, when the user moves on instead, a new user message closes the call.
    items = [
        {"role": "user", "content": "Remove /tmp/x."},
        {"id": "rs_1", "type": "reasoning", "summary": []},
        {"arguments": "{}", "call_id": "call_1", "name": "rm", "type": "function_call", "id": "fc_1"},
    ]
    if closed:
        items.append({"role": "user", "content": "Never mind."})
    session = CuratorSession(new_id(), str(tmp_path / "s.db"), max_tokens=4_000)
    run(session.add_items(items))
    view = run(session.get_items())
    _reasoning_followed(view)
    assert view == [items[0]] + items[3:]
    # The record keeps them.
    assert run(session.get_items(limit=len(items))) == items





@pytest.mark.parametrize(("items", "found"), [({"role": "user", "content": "hi"}, "dict"), ("hi", "str"), (None, "NoneType")])
def test_add_items_refuses_what_is_not_a_list_by_what_it_is(tmp_path, items, found):
    session = CuratorSession(new_id(), str(tmp_path / "s.db"))
    with pytest.raises(FormatError) as caught:
        run(session.add_items(items))
    assert caught.value.kind == "wrong_type"
    assert str(caught.value) == f"`items` should be a list of items, found a `{found}`"
    # Any iterable of items is taken.
    run(session.add_items(iter([{"role": "user", "content": "hi"}])))
    assert run(session.get_items()) == [{"role": "user", "content": "hi"}]





def test_a_postgres_url_that_insists_on_tls_is_taken():
    # Managed PostgreSQL servers take only encrypted connections: the package is built with
    # TLS, as the command line is, so `sslmode=require` is tried, not refused as unbuilt.
    with pytest.raises(StoreError) as caught:
        CuratorSession(new_id(), "postgres://curator@127.0.0.1:1/records?sslmode=require")
    assert caught.value.kind == "unavailable", str(caught.value)


def test_the_sessions_unsendable_warning_points_at_the_callers_line(tmp_path):
    from curator_context import UnsendableWarning

    session = CuratorSession(new_id(), str(tmp_path / "s.db"), max_tokens=4_000)
    run(session.add_items([{"role": "user", "content": "go"}, {"type": "function_call_output", "call_id": "x", "output": "?"}]))

    async def read():
        return await session.get_items()

    with pytest.warns(UnsendableWarning) as caught:
        run(read())
    assert [w.filename for w in caught] == [__file__]


def test_a_negative_limit_asks_for_every_item_as_the_sdk_takes_it(tmp_path):
    # A budget that curates: a negative limit still gives every item, uncurated.
    session = CuratorSession(new_id(), str(tmp_path / "s.db"), max_tokens=150)
    run(session.add_items(agent_items()))
    assert len(run(session.get_items())) < len(agent_items())
    assert run(session.get_items(limit=-1)) == agent_items()
    assert run(session.get_items(limit=0)) == []
    assert run(session.get_items(limit=2)) == agent_items()[-2:]


def test_a_database_file_deleted_under_a_live_session_refuses_writes(tmp_path):
    path = tmp_path / "s.db"
    session = CuratorSession(new_id(), str(path))
    run(session.add_items([{"role": "user", "content": "first"}]))
    path.unlink()
    for write in (
        lambda: session.add_items([{"role": "user", "content": "lost?"}]),
        session.pop_item,
        session.clear_session,
    ):
        with pytest.raises(StoreError) as bad:
            run(write())
        assert bad.value.kind == "unavailable" and str(path) in str(bad.value) and "deleted" in str(bad.value)
    # A new session on the path starts a new file and records there.
    again = CuratorSession(session.session_id, str(path))
    run(again.add_items([{"role": "user", "content": "second"}]))
    assert run(again.get_items()) == [{"role": "user", "content": "second"}]


def test_a_read_only_file_is_said_in_python_terms(tmp_path):
    import subprocess

    path = tmp_path / "s.db"
    run(CuratorSession(new_id(), str(path)).add_items([{"role": "user", "content": "hi"}]))
    # Made immutable, which binds root too (tests run as root in CI); else read-only.
    immutable = subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
    if not immutable:
        path.chmod(0o444)
    try:
        with pytest.raises(StoreError) as bad:
            run(CuratorSession(new_id(), str(path)).add_items([{"role": "user", "content": "more"}]))
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o644)
    assert bad.value.kind == "read_only", bad.value
    assert "writable" in str(bad.value), bad.value
    assert "SqliteStore" not in str(bad.value) and "open_read_only" not in str(bad.value)
