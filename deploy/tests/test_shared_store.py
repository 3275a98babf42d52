"""Results any replica can serve (issue: a shared offload store), from outside.

The topology: a real SeaweedFS (S3 gateway on 127.0.0.1), and memory-server
replicas with no shared disk (each its own output directory), all with
`[prompt.offload] store = "s3://BUCKET/PREFIX"` and the same two bearer
tokens. The official Python SDK drives them over streamable HTTP, on the
2026-07-28 wire and on the 2025-11-25 one (`initialize`, sessions):

- a result offloaded through replica A is extracted through replica B, and
  equals real `jq` run on the object the store holds (`tail -n +2 | jq`);
- with A killed, B still serves it;
- the other principal gets the unknown-handle answer; no token gets 401;
- a handle past its TTL gets the expiry error;
- with the store down, offloads fall back to truncation (counted by reason,
  and as store errors by operation and kind) and reads say the store is
  unreachable; with it back, both work;
- three replicas' cleaners on one bucket delete every expired result, and
  their counters add up to exactly one expiry per result.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import urllib.error
import urllib.request
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Iterator

import anyio
import httpx2
import pytest
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lrolib import L, M
from testkit.http import DIRECT, http_get
from testkit.paths import MEMORY_SERVER, REPO
from testkit.procs import Background, free_port
from testkit.seaweed import Seaweed
from testkit.waiting import PROMPT_S, wait_until

pytestmark = pytest.mark.usefixtures("binaries")

TOKENS = {"alice": "tok-alice-0123456789", "bob": "tok-bob-9876543210"}
BUCKET = "lro-results"
WIRES = ["2026-07-28", "legacy"]
CASE_S = 120


@pytest.fixture(scope="module")
def seaweed(tmp_path_factory) -> Iterator[Seaweed]:
    weed = Seaweed(tmp_path_factory.mktemp("s3"))
    try:
        weed.start()
        weed.create_bucket(BUCKET)
        yield weed
    finally:
        weed.close()


@dataclass
class Replica:
    url: str
    metrics: str
    proc: Background


@contextmanager
def replicas(weed: Seaweed, tmp: Path, prefix: str, n: int = 2, context: Path | None = None,
             bucket: str = BUCKET, env: dict[str, str] | None = None, **offload: str) -> Iterator[list[Replica]]:
    """`n` memory-servers on one bucket prefix, each with its own output
    directory, and the context tools on `context` when given; `offload` sets
    further `[prompt.offload]` keys, `env` overrides the AWS variables."""
    with ExitStack() as stack:
        out = []
        for i in range(n):
            metrics = free_port()
            argv = [str(MEMORY_SERVER), "--http", "127.0.0.1:0", "--metrics", f"127.0.0.1:{metrics}"]
            for who, token in TOKENS.items():
                argv += ["--bearer", f"{token}={who}"]
            if context is not None:
                argv += ["--context-store-root", str(context)]
            env = {
                "PATH": "/usr/bin:/bin",
                "ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR": str(tmp / f"replica-{i}"),
                "ATLATL_PROMPT__OFFLOAD__STORE": f"s3://{bucket}/{prefix}",
                **{f"ATLATL_PROMPT__OFFLOAD__{k.upper()}": v for k, v in offload.items()},
                **weed.env(),
                **(env or {}),
            }
            proc = Background(argv, env, tmp / f"replica-{i}.err", name=f"replica {i}")
            stack.callback(proc.stop)
            out.append(Replica(proc.wait_url(), f"http://127.0.0.1:{metrics}/metrics", proc))
        yield out


@asynccontextmanager
async def client(url: str, who: str, wire: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {TOKENS[who]}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=wire, cache=None) as c:
            yield c


async def bounded(run) -> None:
    with anyio.fail_after(CASE_S):
        await run()


def text(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def offload(c: Client) -> dict:
    """A result over the threshold; its descriptor."""
    result = await c.call_tool("list_memories", {"limit": 200, "detail": "full"})
    assert not result.is_error, text(result)
    return json.loads(result.content[0].text)


async def extract(c: Client, **args) -> tuple[str, bool]:
    result = await c.call_tool("lro_extract", args)
    return text(result), bool(result.is_error)


def run_jq(jq_bin: str, args: list[str], jsonl: bytes) -> str:
    """Real jq on the object's records (`tail -n +2 | jq …`)."""
    records = jsonl.split(b"\n", 1)[1]
    out = subprocess.run([jq_bin, *args], input=records, capture_output=True, check=True, timeout=60)
    return out.stdout.decode()


def key_of(weed: Seaweed, prefix: str, handle: str) -> str:
    """The object a handle names: the one key under the prefix with its ULID."""
    ulid = handle.rsplit("-", 1)[1]
    keys = [k for k in weed.keys(BUCKET, prefix) if ulid in k]
    assert len(keys) == 1, (handle, keys)
    return keys[0]


def scrape(url: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include `labels`."""
    status, body = http_get(url)
    assert status == 200, body
    total = 0.0
    for line in body.splitlines():
        m = re.match(rf"^{re.escape(name)}(?:\{{(.*)\}})? (\S+)$", line)
        if not m:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total


@pytest.mark.parametrize("wire", WIRES)
def test_offloaded_on_one_replica_read_on_the_other(wire, seaweed, tmp_path, jq):
    prefix = f"across-{wire}"

    async def run() -> None:
        with replicas(seaweed, tmp_path, prefix) as (a, b):
            async with client(a.url, "alice", wire) as alice_a:
                d = await offload(alice_a)
            handle = d["handle"]
            assert handle.startswith("lro:") and "file_path" not in d, d
            assert f'lro_extract(handle="{handle}", recipe=1)' in d["guidance"], d["guidance"]
            stored = seaweed.read(BUCKET, key_of(seaweed, prefix, handle))
            assert stored is not None and stored.count(b"\n") == d["summary"]["count"] + 1
            # No replica keeps a copy: the object is the only one.
            assert not [p for p in tmp_path.rglob("*.jsonl")], list(tmp_path.rglob("*"))

            first = json.loads(stored.split(b"\n")[1])
            query = f'select(.id == "{first["id"]}") | {{id, namespace}}'
            recipe6 = shlex.split(d["jq_recipes"][5]["command"])
            async with client(b.url, "alice", wire) as alice_b:
                got, failed = await extract(alice_b, handle=handle, query=query)
                assert not failed, got
                assert got.strip() == run_jq(jq, ["-c", query], stored).strip()
                got, failed = await extract(alice_b, handle=handle, recipe=6)
                assert not failed, got
                assert got.strip() == run_jq(jq, recipe6, stored).strip(), (recipe6, got)

            # Replica A lost: B serves the result on its own.
            a.proc.stop(grace=0)
            async with client(b.url, "alice", wire) as alice_b:
                got, failed = await extract(alice_b, handle=handle, lines={"offset": 0, "limit": 1})
                assert not failed and got.startswith("1:{"), got
            async with client(b.url, "bob", wire) as bob_b:
                theirs, f1 = await extract(bob_b, handle=handle, recipe=1)
                ghost = handle[:-4] + ("ZZZZ" if not handle.endswith("ZZZZ") else "YYYY")
                never, f2 = await extract(bob_b, handle=ghost, recipe=1)
            assert f1 and f2 and "not yours" in theirs, theirs
            assert theirs.replace(handle, "H") == never.replace(ghost, "H")
            assert not list(tmp_path.rglob("*.jsonl")), "a copy outlived its call"

    anyio.run(bounded, run)


def test_no_token_is_refused(seaweed, tmp_path):
    with replicas(seaweed, tmp_path, "auth", n=1) as (a,):
        request = urllib.request.Request(
            a.url, data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": L.UpstreamMethod.ToolsList, "params": {}}).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            DIRECT.open(request, timeout=PROMPT_S)
        assert refused.value.code == 401
        assert "Bearer" in refused.value.headers.get("WWW-Authenticate", "")


def test_an_expired_handle_says_so(seaweed, tmp_path):
    async def run() -> None:
        with replicas(seaweed, tmp_path, "expiry", ttl_seconds="1") as (a, b):
            async with client(a.url, "alice", "2026-07-28") as alice:
                handle = (await offload(alice))["handle"]
            async with client(b.url, "alice", "2026-07-28") as alice:
                deadline = anyio.current_time() + 15
                while True:
                    got, failed = await extract(alice, handle=handle, recipe=1)
                    if "has expired" in got:
                        break
                    assert anyio.current_time() < deadline, got
                    await anyio.sleep(0.2)
            assert failed and "call the original tool again" in got, got

    anyio.run(bounded, run)


def test_a_store_outage_falls_back_and_heals(seaweed, tmp_path):
    async def run() -> None:
        with replicas(seaweed, tmp_path, "outage", store_timeout_seconds="3") as (a, b):
            async with client(a.url, "alice", "2026-07-28") as alice:
                handle = (await offload(alice))["handle"]
            seaweed.stop()
            try:
                async with client(a.url, "alice", "2026-07-28") as alice:
                    result = await alice.call_tool("list_memories", {"limit": 200, "detail": "full"})
                    warning = text(result)
                    assert not result.is_error and warning.startswith("WARNING: large result offloading failed"), warning
                    assert "store is unreachable" in warning and seaweed.endpoint not in warning and BUCKET not in warning, warning
                    got, failed = await extract(alice, handle=handle, recipe=1)
                    assert failed and "store is unreachable" in got and "try again" in got, got
                failures = scrape(a.metrics, M.OFFLOAD_WRITE_FAILURES_TOTAL, reason=L.WriteFailureReason.StoreUnreachable)
                assert failures == 1, failures
                put_errors = scrape(a.metrics, M.STORE_ERRORS_TOTAL, op=L.StoreOp.Put, kind=L.StoreErrorKind.Unreachable)
                assert put_errors >= 1, put_errors
                # The first offload, before the outage, was put and counted.
                assert scrape(a.metrics, M.STORE_BYTES_TOTAL, op=L.StoreOp.Put) > 100_000
            finally:
                seaweed.start()
            async with client(b.url, "alice", "2026-07-28") as alice:
                got, failed = await extract(alice, handle=handle, recipe=1)
                assert not failed, got
                assert "handle" in await offload(alice)

    anyio.run(bounded, run)


def test_three_cleaners_count_each_expiry_once(seaweed, tmp_path):
    prefix = "cleanup"
    results = 6

    async def run() -> None:
        # Every replica's cleaner runs every second on the same prefix.
        with replicas(seaweed, tmp_path, prefix, n=3, ttl_seconds="2", cleanup_schedule="* * * * * *") as reps:
            for i in range(results):
                async with client(reps[i % 3].url, "alice", "2026-07-28") as alice:
                    assert (await offload(alice))["handle"]
            # The principal key stays: it names folders, it is no result.
            results_left = lambda: [k for k in seaweed.keys(BUCKET, prefix) if not k.endswith("/lro-principal-key")]
            wait_until(lambda: not results_left(), timeout=60, what="the cleaners to empty the prefix")
            expired = [scrape(r.metrics, M.OFFLOAD_FILES_EXPIRED_TOTAL, reason=L.ExpiryReason.Ttl) for r in reps]
            assert sum(expired) == results, expired

    anyio.run(bounded, run)


def test_the_deploy_script_serves_both_replicas_behind_nginx(tmp_path):
    """deploy/shared-store/run.sh, the topology without Docker: a sessionless
    client's requests through nginx land on both replicas, and each reads the
    result the other wrote."""
    port = free_port()
    env = {**os.environ, "LRO_PORT": str(port), "MEMORY_SERVER": str(MEMORY_SERVER), "TMPDIR": str(tmp_path)}
    script = Background(["bash", str(REPO / "deploy" / "shared-store" / "run.sh")], env, tmp_path / "run.err",
                        new_session=True, name="run.sh")
    try:
        url = script.wait_line(r"topology ready: (http://\S+/mcp)", timeout=120).group(1)
        metrics = re.findall(r"metrics (http://\S+/metrics)", script.stderr())
        assert len(metrics) == 2, script.stderr()

        async def run() -> None:
            headers = {"Authorization": "Bearer alice-token"}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28", cache=None) as c:
                    handle = (await offload(c))["handle"]
                    for _ in range(4):
                        got, failed = await extract(c, handle=handle, recipe=6)
                        assert not failed, got

        anyio.run(bounded, run)
        served = [scrape(m, M.EXTRACT_REQUESTS_TOTAL) for m in metrics]
        assert all(n >= 1 for n in served) and sum(served) == 4, served
    finally:
        script.stop()
    assert not list(tmp_path.glob("lro-shared-store.*")), "the script left its directory"


def test_the_compose_topology_matches_the_script():
    compose = yaml.safe_load((REPO / "deploy" / "shared-store" / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"seaweedfs", "bucket", "replica-a", "replica-b", "nginx"} <= set(services)
    for name in ("replica-a", "replica-b"):
        env = services[name]["environment"]
        assert env["ATLATL_PROMPT__OFFLOAD__STORE"].startswith("s3://lro-results/")
        assert env["AWS_ENDPOINT_URL"] == "http://seaweedfs:8333"
    identity = json.loads((REPO / "deploy" / "shared-store" / "s3.json").read_text())["identities"][0]["credentials"][0]
    assert identity["accessKey"] == services["replica-a"]["environment"]["AWS_ACCESS_KEY_ID"]
    nginx = (REPO / "deploy" / "shared-store" / "nginx-compose.conf").read_text()
    assert "server replica-a:8080;" in nginx and "server replica-b:8080;" in nginx
    # The script's template and the compose copy proxy the same way.
    template = (REPO / "deploy" / "shared-store" / "nginx.conf.in").read_text()
    directives = lambda text: re.findall(r"^ {12}(\S.*;)$", text, re.M)  # noqa: E731
    assert directives(template) == directives(nginx)


def test_context_entries_are_read_back_through_another_replica(seaweed, tmp_path):
    """Replicas are given the same context store root; here, on one machine,
    it is one directory, so each read through replica B follows the removal
    of every local copy: B finds the entry only through the store."""
    ctx = tmp_path / "ctx"
    marker = "marker-of-alice"
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "dump", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": (marker + " ") * 3000},
        {"role": "assistant", "content": "done"},
    ]

    def forget() -> None:
        for entry in ctx.rglob("*"):
            if entry.is_file():
                entry.unlink()

    async def run() -> None:
        with replicas(seaweed, tmp_path, "context", context=ctx) as (a, b):
            async with client(a.url, "alice", "2026-07-28") as alice:
                r = await alice.call_tool("context_offload", {
                    "messages": history, "context_manage_mode": "compact", "max_total_tokens": 500,
                    "store_dir": "store"})
                assert not r.is_error, text(r)
                answer = json.loads(text(r))
                stored = answer["metadata"]["stored_files"]
                assert stored and not answer["metadata"].get("warnings"), answer["metadata"]
            forget()
            async with client(b.url, "alice", "2026-07-28") as alice:
                got = await alice.call_tool("context_read_file", {"absolute_path": stored[0]})
                assert not got.is_error and marker in text(got), text(got)
                forget()
                found = await alice.call_tool("context_grep", {"pattern": marker, "path": "store"})
                assert not found.is_error and marker in text(found), text(found)
            forget()
            async with client(b.url, "bob", "2026-07-28") as bob:
                theirs = await bob.call_tool("context_read_file", {"absolute_path": stored[0]})
                assert theirs.is_error and marker not in text(theirs), text(theirs)
                grep = await bob.call_tool("context_grep", {"pattern": marker})
                assert text(grep).startswith("Found 0 matches"), text(grep)
            assert not Path(stored[0]).exists(), "another principal's entry was copied to disk"

    anyio.run(bounded, run)


def test_a_presigned_url_downloads_the_callers_result_only(seaweed, tmp_path):
    async def run() -> None:
        with replicas(seaweed, tmp_path, "presign", presign="true") as (a, b):
            async with client(a.url, "alice", "2026-07-28") as alice:
                d = await offload(alice)
                assert "presign" not in json.dumps(d), "a descriptor never carries a URL"
            handle = d["handle"]
            async with client(b.url, "alice", "2026-07-28") as alice:
                answer, failed = await extract(alice, handle=handle, presign=True)
            assert not failed, answer
            url = re.search(r"(http://\S+)", answer).group(1)
            assert "X-Amz-Expires=300" in url and "Security-Token" not in url, url
            with DIRECT.open(url, timeout=PROMPT_S) as reply:
                downloaded = reply.read()
            assert downloaded == seaweed.read(BUCKET, key_of(seaweed, "presign", handle))
            signature = re.search(r"X-Amz-Signature=(\w+)", url).group(1)
            assert signature not in b.proc.stderr(), "a URL reached the log"
            async with client(b.url, "bob", "2026-07-28") as bob:
                theirs, failed = await extract(bob, handle=handle, presign=True)
            assert failed and "not yours" in theirs and "http" not in theirs, theirs
        (tmp_path / "off").mkdir()
        with replicas(seaweed, tmp_path / "off", "presign", n=1) as (c,):
            async with client(c.url, "alice", "2026-07-28") as alice:
                refused, failed = await extract(alice, handle=handle, presign=True)
            assert failed and "no download URLs" in refused, refused

    anyio.run(bounded, run)


@pytest.mark.parametrize(("fault", "reason"), [
    ("credentials", L.WriteFailureReason.StoreCredentials),
    ("bucket", L.WriteFailureReason.StoreBucketMissing),
])
def test_a_misconfigured_store_falls_back_with_its_own_reason(fault, reason, seaweed, tmp_path):
    """Refused credentials and a missing bucket: every offload falls back to
    truncation, counted under a reason of its own, and the warning names no
    credential, bucket or endpoint."""
    wrong = {"credentials": {"AWS_SECRET_ACCESS_KEY": "sk-wrong-" + seaweed.secret_key[-6:]},
             "bucket": {}}[fault]
    bucket = BUCKET if fault == "credentials" else "lro-no-such-bucket"

    async def run() -> None:
        with replicas(seaweed, tmp_path, "faults", n=1, bucket=bucket, env=wrong) as (a,):
            async with client(a.url, "alice", "2026-07-28") as alice:
                result = await alice.call_tool("list_memories", {"limit": 200, "detail": "full"})
            warning = text(result)
            assert not result.is_error and warning.startswith("WARNING: large result offloading failed"), warning
            for secret in (seaweed.secret_key, seaweed.access_key, seaweed.endpoint, bucket, *wrong.values()):
                assert secret not in warning, warning
            assert scrape(a.metrics, M.OFFLOAD_WRITE_FAILURES_TOTAL, reason=reason) == 1

    anyio.run(bounded, run)
