"""How soon a steering message reaches the model (issue 48): ``inbox.send()`` to the request.

Run: ``python benchmarks/steer_latency.py`` (add ``--quick`` for 3 repetitions instead of 20).

A real :class:`agentnb.testing.ScriptedServer` (HTTP on 127.0.0.1) holds the reply of step 0
(a tool call) while the run waits on it. The benchmark sends a message to the run's
:class:`agentnb.Inbox` from this thread, keeps the reply held ``--hold`` ms more (the step that
was running goes on), then lets it go; the run executes the tool and sends step 1's request,
which must carry the message. Measured with the server's arrival times (``time.monotonic``):

* **send -> request**: from ``send()`` to the server receiving the request with the message;
* **beyond the step**: from the held reply's release (the end of the step that was running,
  as far as the person is concerned) to that request: the rest of the step (the reply read,
  the tool run, the results appended) plus what steering adds;
* **bare step**: the same, in runs where nothing was sent.

Target: *beyond the step* <= 100 ms (issue 48); *beyond the step* - *bare step* is what the inbox
itself costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from typing import Any

from agentnb import Agent, Inbox, tool
from agentnb.providers.openai import OpenAIProvider
from agentnb.testing.server import Reply, ScriptedServer, text, tool_calls

TARGET_MS = 100.0
MESSAGE = "also check the 2024 column"


@tool
def lookup(year: int) -> str:
    """The sales table of a year."""
    return f"{year}: 10 units"


def one_run(server: ScriptedServer, agent: Agent, hold_s: float, steer: bool) -> tuple[float, float]:
    """One run whose step-0 reply is held; ``(send -> request, release -> request)`` in seconds."""
    held = threading.Event()
    first: Reply = tool_calls(("lookup", {"year": 2023}))
    first.hold = held
    server.script(first, text("2023: 10 units; 2024: 12 units"))
    before = len(server.requests)
    inbox = Inbox()
    done: list[Any] = []
    runner = threading.Thread(target=lambda: done.append(agent.run("Sales in 2023?", inbox=inbox)))
    runner.start()
    server.wait_for_requests(before + 1)  # step 0's request came: its reply is held
    sent = time.monotonic()
    if steer:
        inbox.send(MESSAGE)
    time.sleep(hold_s)  # the step that was running goes on
    released = time.monotonic()
    held.set()
    second = server.wait_for_requests(before + 2)
    runner.join()
    carried = MESSAGE in str(second.body.get("messages"))
    if carried != steer or done[0].stop_reason != "answer":
        raise SystemExit(f"failed: the request carried the message: {carried}; the run: {done[0].stop_reason}")
    return second.at - sent, second.at - released


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repetitions instead of 20")
    parser.add_argument("--hold", type=float, default=200.0, help="ms the reply stays held after send (default 200)")
    args = parser.parse_args()
    reps = 3 if args.quick or os.environ.get("AGENTNB_BENCH_QUICK") else 20
    hold = args.hold / 1000
    with ScriptedServer() as server:
        agent = Agent(OpenAIProvider("wire", base_url=server.url, api_key="none"), tools=[lookup])
        one_run(server, agent, 0.0, False)  # warm: the HTTP client, the tool's schema
        steered, bare = [], []
        for _ in range(reps):  # interleaved, so that the machine's load falls on both alike
            steered.append(one_run(server, agent, hold, True))
            bare.append(one_run(server, agent, hold, False))
    ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    to_request = ms([s for s, _ in steered])
    beyond = ms([r for _, r in steered])
    step = ms([r for _, r in bare])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"steer latency over {reps} runs each (medians; reply held {args.hold:g} ms after send; load {load:.1f})")
    print(f"  send -> request with the message   {to_request:8.1f} ms")
    print(f"  beyond the step (release -> request, steered)      {beyond:8.1f} ms   target <= {TARGET_MS:g}")
    print(f"  bare step (release -> request, nothing sent)       {step:8.1f} ms")
    print(f"  the inbox's own cost                               {beyond - step:+8.1f} ms")
    print("meets the target" if beyond <= TARGET_MS else "over the target")


if __name__ == "__main__":
    main()
