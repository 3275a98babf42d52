"""D. Shadowing: an upstream that has its own `lro_extract` keeps it; the
proxy lists it once (the upstream's), routes calls to the upstream, and warns
on stderr.
"""

from __future__ import annotations

import re

import anyio
import fixture_spec as fixture
import pytest

from support import descriptor, proxied, texts
from testkit.waiting import PROMPT_S, await_until

SHADOW = {"FIXTURE_SHADOW": "1"}


@pytest.mark.anyio
async def test_upstream_lro_extract_wins(tmp_path, fixture_env, out_dir):
    async with proxied(tmp_path, fixture_env, out_dir, SHADOW, threshold=500) as (proc, session):
        with anyio.fail_after(PROMPT_S):
            tools = (await session.list_tools()).tools
            extracts = [t for t in tools if t.name == "lro_extract"]
            assert len(extracts) == 1, [t.name for t in tools]
            assert extracts[0].description == fixture.SHADOW_DESCRIPTION
            result = await session.call_tool("lro_extract", {"file_path": "some.jsonl", "recipe": 2})
            assert texts(result) == ["upstream lro_extract: some.jsonl 2"]
            # Offloading itself still works; the descriptor must not send the
            # model to a tool that is now the upstream's.
            big = descriptor(await session.call_tool("big_json", {"n": 500}))
        assert "lro_extract(" not in big["guidance"], big["guidance"]

        def warned() -> list[str]:
            return [
                line
                for line in proc.stderr().splitlines()
                if "lro_extract" in line and re.search(r"\bWARN", line)
            ]

        await await_until(warned, what="a WARN line about lro_extract on the proxy's stderr")


@pytest.mark.anyio
async def test_upstream_lro_extract_wins_without_a_prior_tools_list(tmp_path, fixture_env, out_dir):
    """A client may call a tool it knows without listing first (a cached tool
    list, a reconnect): the call must still reach the upstream's lro_extract."""
    async with proxied(tmp_path, fixture_env, out_dir, SHADOW, threshold=500) as (_, session):
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool("lro_extract", {"file_path": "some.jsonl", "recipe": 2})
    assert texts(result) == ["upstream lro_extract: some.jsonl 2"], texts(result)
