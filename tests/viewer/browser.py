"""Headless Chromium driven over the DevTools protocol on a pipe (no library, no port).

``--remote-debugging-pipe`` makes Chromium read protocol messages on fd 3 and write on
fd 4, each a JSON object ended by NUL. :class:`Browser` opens a page, waits for its load
event, evaluates expressions (DevTools evaluation is not subject to the page's
Content-Security-Policy, so a page without script can still be measured) and keeps
every network request, console message and dialog the page produced.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def require_browser() -> str:
    """Chromium's path; skip without it, fail with GROUNDKIT_REQUIRE_BROWSER=1 (CI)."""
    if CHROMIUM is None:
        message = "chromium is not installed (make browser)"
        if os.environ.get("GROUNDKIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{message}, and GROUNDKIT_REQUIRE_BROWSER=1")
        pytest.skip(message)
    return CHROMIUM


class Browser:
    """One headless Chromium with one page (see the module)."""

    def __init__(self, profile: Path, width: int = 1200, height: int = 900) -> None:
        ours_in, theirs_out = os.pipe()   # Chromium writes fd 4 -> we read
        theirs_in, ours_out = os.pipe()   # we write -> Chromium reads fd 3

        def wire() -> None:
            os.dup2(theirs_in, 3)
            os.dup2(theirs_out, 4)

        self.proc = subprocess.Popen(
            [require_browser(), "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
             "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(theirs_in)
        os.close(theirs_out)
        self.read_fd, self.write_fd = ours_in, ours_out
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        target = next(t for t in self.call("Target.getTargets")["targetInfos"]
                      if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=target["targetId"],
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, *, session: bool = False, timeout: float = 60,
             **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.read_fd], [], [],
                                        max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the pipe")
            self.buffer += chunk
        raw, _, self.buffer = self.buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(raw)
        return parsed

    def open(self, url: str, timeout: float = 60) -> None:
        """Navigate to ``url`` and wait for its load event."""
        seen = len(self.events)
        self.call("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events[seen:]):
            self._event(deadline)

    def settle(self, seconds: float) -> None:
        """Collect events for ``seconds`` more (late requests, timers)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self._event(deadline)
            except TimeoutError:
                return

    def _event(self, deadline: float) -> None:
        """Keep the next event; a dialog (which would block the page) is dismissed."""
        event = self._receive(deadline)
        self.events.append(event)
        if event.get("method") == "Page.javascriptDialogOpening":
            self.call("Page.handleJavaScriptDialog", session=True, accept=False)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"])[:500])
        return result["result"].get("value")

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def messages(self) -> list[dict[str, Any]]:
        """Console calls, log entries, exceptions and dialogs the page produced."""
        kinds = {"Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded",
                 "Page.javascriptDialogOpening"}
        return [e for e in self.events if e.get("method") in kinds]

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError, EOFError):
            self.call("Browser.close", timeout=10)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.read_fd)
        os.close(self.write_fd)
