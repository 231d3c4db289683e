"""The package's face: its version, its names, and async calls that leave the event loop free."""

import asyncio
import uuid

import curator_context
from curator_context.agents import CuratorSession


def test_the_version_and_only_the_documented_names():
    assert curator_context.__version__.count(".") == 2
    public = {name for name in dir(curator_context) if not name.startswith("_")}
    # Submodules imported by the package's own code are attributes too.
    assert public - {"agents", "langchain", "middleware"} == set(curator_context.__all__) - {"__version__"}


def test_a_slow_curation_leaves_the_event_loop_free(tmp_path):
    """A task that must be shortened (a long run of one character, which the exact tokenizer
    counts slowly) is curated on a worker thread: the loop goes on ticking meanwhile."""
    session = CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "s.db", max_tokens=2_000)

    async def main():
        await session.add_items([{"role": "user", "content": "=" * 400_000}, {"role": "assistant", "content": "ok"}])
        ticks = 0
        done = False

        async def ticker():
            nonlocal ticks
            while not done:
                await asyncio.sleep(0.001)
                ticks += 1

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        view = await session.get_items()
        done = True
        await task
        return view, ticks

    view, ticks = asyncio.run(main())
    assert len(view[0]["content"]) < 400_000
    assert ticks >= 3, ticks
