"""Open a page in headless Chromium (the system's ``chromium``, driven by Playwright) as a user would.

``open_page(url_or_path, screenshot=None, evaluate=(), wait_for=None)`` loads a URL (or a
local file), waits for it to settle, and returns a dict: ``status`` (the HTTP status of the
main response; None for files), ``console_errors`` (console messages of type error and
uncaught page errors), ``evaluate`` (the value of each JavaScript expression, in order) and
``screenshot`` (the PNG path, if one was asked for). Without Chromium or Playwright it fails
with the command that installs them; it never skips.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any, Dict, Iterable, List, Optional

import pytest

INSTALL_HINT = ("headless browser tests need Debian's chromium and Playwright for Python: "
                "`apt-get install -y chromium` and `pip install '.[test]'`")


def chromium_path() -> str:
    """The system Chromium executable; fails the test with the install command when missing."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail(f"chromium not found on PATH; {INSTALL_HINT}", pytrace=False)
    return path


def open_page(url_or_path: str, screenshot: Optional[str] = None, evaluate: Iterable[str] = (),
              wait_for: Optional[str] = None, timeout_s: float = 30.0) -> Dict[str, Any]:
    """Load ``url_or_path`` in headless Chromium and report what a user's browser saw.

    ``wait_for`` is a JavaScript expression polled until true before evaluating (for pages
    that fill themselves in with requests of their own).
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"playwright is not installed; {INSTALL_HINT}", pytrace=False)
    exe = chromium_path()
    url = url_or_path if "://" in url_or_path else "file://" + os.path.abspath(url_or_path)
    errors: List[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
            response = page.goto(url, wait_until="load", timeout=timeout_s * 1000)
            deadline = time.monotonic() + timeout_s
            while wait_for and not page.evaluate(wait_for):  # polled here: the page's CSP may forbid eval
                if time.monotonic() > deadline:
                    pytest.fail(f"page never satisfied {wait_for!r}; console errors: {errors}", pytrace=False)
                page.wait_for_timeout(100)
            page.wait_for_load_state("networkidle", timeout=timeout_s * 1000)
            values = [page.evaluate(expr) for expr in evaluate]
            if screenshot:
                page.screenshot(path=screenshot, full_page=False)
        finally:
            browser.close()
    return {"status": None if response is None or url.startswith("file://") else response.status,
            "console_errors": errors, "evaluate": values, "screenshot": screenshot}
