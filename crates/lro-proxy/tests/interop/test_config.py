"""Configuration of the proxy's offloading: ATLATL_PROMPT__OFFLOAD__ENABLED,
and --config FILE with per-tool overrides keyed by the upstream's tool names.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import fixture_spec as fixture
import pytest

from support import connect, descriptor, fixture_cmd, full_env, proxied, proxy_argv, run_cli, texts
from testkit.waiting import PROMPT_S


@pytest.mark.anyio
async def test_disabled_offloading_passes_large_results_inline(tmp_path, fixture_env, out_dir):
    async with proxied(tmp_path, fixture_env, out_dir, threshold=500, enabled=False) as (_, session):
        with anyio.fail_after(PROMPT_S):
            result = await session.call_tool("big_json", {"n": 500})
    assert json.loads(texts(result)[0]) == [fixture.record(i) for i in range(500)]
    assert not list(out_dir.iterdir())


@pytest.mark.anyio
async def test_config_file_with_a_per_tool_override(tmp_path, fixture_env, out_dir):
    config = tmp_path / "lro.toml"
    config.write_text(
        "[prompt.offload]\n"
        "threshold_tokens = 500\n"
        f"output_dir = {json.dumps(str(out_dir))}\n"
        "[prompt.offload.tools.long_log]\n"
        "enabled = false\n"
    )
    env = full_env(fixture_env)
    argv = proxy_argv("--config", str(config), upstream=fixture_cmd())
    async with connect(argv, env, tmp_path / "proxy.err") as (_, session):
        with anyio.fail_after(PROMPT_S):
            big = descriptor(await session.call_tool("big_json", {"n": 500}))
            log = await session.call_tool("long_log", {"lines": 2000})
    assert Path(big["file_path"]).parent == out_dir
    assert texts(log) == [fixture.log_text(2000)], "long_log is not offloaded (its override)"
    assert len(list(out_dir.iterdir())) == 1


def test_bad_config_file_is_a_usage_error(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[prompt.offload]\nthreshhold_tokens = 3\n")
    proc = run_cli(["proxy", "--config", str(config), "--", "true"])
    assert proc.returncode == 2, proc
    assert "--config" in proc.stderr, proc.stderr
    assert "panicked" not in proc.stderr
