"""Bounded polling: every wait of the suites ends at a deadline, with a message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# The default bound on one wait: an answer, a notification, a readiness line.
PROMPT_S = 10.0


class Deadline:
    """Calls a predicate until a deadline, then fails with what it waited for."""

    def __init__(self, timeout: float, what: Any, errors: tuple[type[BaseException], ...] = ()):
        self.timeout = timeout
        self.what = what
        self.errors = errors
        self.last_error: BaseException | None = None
        self._at = time.monotonic() + timeout

    def poll(self, predicate: Callable[[], Any]) -> Any:
        """The predicate's value; AssertionError once it is still falsy at the deadline.
        An exception of one of `errors` counts as falsy (and is named in the message)."""
        try:
            value = predicate()
        except self.errors as exc:
            self.last_error, value = exc, None
        if not value and time.monotonic() >= self._at:
            last = f" (last error: {self.last_error!r})" if self.last_error else ""
            raise AssertionError(f"timed out after {self.timeout:g}s waiting for {self.what}{last}")
        return value


def wait_until(
    predicate: Callable[[], Any],
    timeout: float = PROMPT_S,
    interval: float = 0.02,
    what: str = "",
    errors: tuple[type[BaseException], ...] = (),
) -> Any:
    """Polls `predicate` until it returns a truthy value (returned) or `timeout`
    passes (AssertionError). Exceptions of the types in `errors` are retried."""
    deadline = Deadline(timeout, what or predicate, errors)
    while not (value := deadline.poll(predicate)):
        time.sleep(interval)
    return value


async def await_until(predicate: Callable[[], Any], timeout: float = PROMPT_S, interval: float = 0.02, what: str = "") -> Any:
    """`wait_until` for async code: sleeps without blocking the event loop."""
    import anyio  # only the async suites have it (it comes with the mcp SDK)

    deadline = Deadline(timeout, what or predicate)
    while not (value := deadline.poll(predicate)):
        await anyio.sleep(interval)
    return value
