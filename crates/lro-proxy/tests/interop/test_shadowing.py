"""D. Shadowing: behind `lro proxy` the layer's own `lro_extract` always
answers. An upstream with a tool of that name (an LRO server of its own) is
hidden: the proxy lists one `lro_extract`, the layer's, and a call reaches
the layer, which reads only the caller's own results. The upstream's tool
would run with no principal, on the proxy's files.
"""

from __future__ import annotations

import anyio
import fixture_spec as fixture
import pytest

from support import descriptor, proxied, texts
from testkit.waiting import PROMPT_S

SHADOW = {"FIXTURE_SHADOW": "1"}
UPSTREAM = "upstream lro_extract"


@pytest.mark.anyio
async def test_the_layers_lro_extract_answers_and_the_upstreams_is_hidden(tmp_path, fixture_env, out_dir):
    async with proxied(tmp_path, fixture_env, out_dir, SHADOW, threshold=500) as (_, session):
        with anyio.fail_after(PROMPT_S):
            tools = (await session.list_tools()).tools
            extracts = [t for t in tools if t.name == "lro_extract"]
            assert len(extracts) == 1, [t.name for t in tools]
            assert extracts[0].description != fixture.SHADOW_DESCRIPTION
            # A name that is nobody's gets the layer's unknown answer.
            unknown = await session.call_tool("lro_extract", {"file_path": "some.jsonl", "recipe": 2})
            assert not any(UPSTREAM in t for t in texts(unknown)), texts(unknown)
            assert "no offloaded result named" in texts(unknown)[0], texts(unknown)
            # The caller's own result is read through it.
            big = descriptor(await session.call_tool("big_json", {"n": 500}))
            own = await session.call_tool("lro_extract", {"file_path": big["file_path"], "recipe": 1})
        assert not own.is_error and texts(own)[0].strip(), texts(own)


@pytest.mark.anyio
async def test_a_call_without_a_prior_tools_list_reaches_the_layer(tmp_path, fixture_env, out_dir):
    """A client may call a tool it knows without listing first (a cached tool
    list, a reconnect): the call still reaches the layer, never the upstream."""
    async with proxied(tmp_path, fixture_env, out_dir, SHADOW, threshold=500) as (_, session):
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool("lro_extract", {"file_path": "some.jsonl", "recipe": 2})
    assert not any(UPSTREAM in t for t in texts(result)), texts(result)
    assert "no offloaded result named" in texts(result)[0], texts(result)
