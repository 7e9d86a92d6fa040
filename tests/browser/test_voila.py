"""The trace widget and the step-through debugger in Voila, in headless Chromium.

Voila connects widgets only after every cell has run, so the debugger must run as a background
task (``--step`` returns at once) for its buttons to work there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lab_harness import Voila, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture(scope="module")
def voila() -> Iterator[Voila]:
    pytest.importorskip("voila")
    server = Voila("voila.ipynb").start()
    try:
        yield server
    finally:
        server.stop()


def test_trace_and_debugger_work_in_voila(voila: Voila, page: Any) -> None:
    page.goto(voila.url, timeout=90_000)
    trace = page.locator(".anb-trace").first
    trace.wait_for(timeout=90_000)
    page.wait_for_function(
        "() => { const b = document.querySelector('.anb-trace .anb-badge'); return !!b && b.textContent === 'finished'; }",
        timeout=30_000,
    )
    # The badge, the image and the rendered answer can arrive in separate widget updates: each
    # is waited for (it failed once under load when counted at once after "finished").
    expect(trace.locator(".anb-head")).to_contain_text("tool calls 4/10", timeout=30_000)
    expect(trace.locator("img[alt='attached image']")).to_have_count(1, timeout=30_000)
    expect(trace.locator(".anb-md strong", has_text="17")).to_have_count(1, timeout=30_000)
    screenshot(trace, "voila_trace.png")

    dbg = page.locator(".anb-debugger").first
    dbg.wait_for(timeout=30_000)
    where = dbg.locator(".anb-debugger-where")
    steps = 0
    while not dbg.locator(".anb-debugger-summary", has_text="run ended").is_visible():
        where.locator("b", has_text="paused before").wait_for(timeout=30_000)
        before = where.inner_text()
        if steps == 1:
            expect(where).to_contain_text("paused before tool call add(a=2, b=3)", timeout=30_000)
            before = where.inner_text()
            screenshot(dbg, "voila_debugger.png")
        dbg.locator(".widget-button", has_text="Step").click()
        steps += 1
        # Wait until the click took effect: a new pause, or the end.
        page.wait_for_function(
            """(before) => { const d = document.querySelector('.anb-debugger');
                   const s = d.querySelector('.anb-debugger-summary');
                   if (s && s.offsetParent !== null && s.textContent.includes('run ended')) return true;
                   const w = d.querySelector('.anb-debugger-where');
                   return w.textContent !== before && w.textContent.includes('paused'); }""",
            arg=before,
            timeout=30_000,
        )
        assert steps < 10
    assert steps == 3
    expect(dbg.locator(".anb-debugger-summary")).to_contain_text("run ended: answer · 1 tool call", timeout=30_000)
    expect(dbg.locator(".anb-md strong", has_text="5")).to_have_count(1, timeout=30_000)
    screenshot(dbg, "voila_debugger_finished.png")
