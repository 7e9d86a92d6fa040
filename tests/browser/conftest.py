"""Fixtures for the browser tests: one JupyterLab server and one Chromium per module.

Module scope, not session: Playwright's sync API keeps an event loop registered as running on
the main thread while it is open, which would mislead later tests that check for a running
loop (the debugger's and run()'s drivers).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from lab_harness import CHROMIUM, CHROMIUM_ARGS, Lab


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    server = Lab().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 2600}, device_scale_factor=1)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()
