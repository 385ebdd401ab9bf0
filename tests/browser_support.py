"""Open a page in headless Chromium (Debian's ``chromium``) and report what a user would see.

:func:`open_page` loads a URL or a local file with Playwright driving the system's chromium
(no browser download), collects console errors and uncaught page errors, evaluates JavaScript
expressions once the page has loaded and can save a screenshot. A missing chromium or
Playwright fails the test with the command that installs it, never a skip.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import pytest

INSTALL_HINT = ("headless browser tests need Debian's chromium and Playwright for Python: "
                "`apt-get install -y chromium` (.ci/run installs it) and `pip install '.[test]'`")


def chromium_path() -> str:
    """Return the path of the system's chromium, or fail with the command that installs it."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail(f"chromium not found on PATH; {INSTALL_HINT}", pytrace=False)
    return path


def open_page(url_or_path: Union[str, Path], screenshot: Optional[Union[str, Path]] = None,
              evaluate: Sequence[str] = (), wait_for: Optional[str] = None, timeout_s: float = 30.0,
              viewport: Sequence[int] = (1280, 900), full_page: bool = False) -> Dict[str, Any]:
    """Load a page in headless chromium and report on it.

    ``url_or_path``: an ``http(s)://`` or ``file://`` URL, or a local file path. ``evaluate``:
    JavaScript expressions evaluated in order after the page loaded (and, if given, after the
    expression ``wait_for`` became truthy: polled from here, since a page's content security
    policy may forbid the browser-side evaluation Playwright's own wait uses). ``screenshot``:
    a PNG path to write.

    Returns a dict: ``console_errors`` (console messages of type error and uncaught page
    errors, as text), ``console`` (every console message as ``"type: text"``), ``status``
    (the HTTP status, or None for files), ``evaluate`` (the results, in order), ``screenshot``,
    ``title`` and ``url``.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"playwright is not installed; {INSTALL_HINT}", pytrace=False)
    target = str(url_or_path)
    if "://" not in target:
        target = Path(target).resolve().as_uri()
    errors: List[str] = []
    messages: List[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": int(viewport[0]), "height": int(viewport[1])})
            page.on("console", lambda m: (messages.append(f"{m.type}: {m.text}"),
                                          errors.append(m.text) if m.type == "error" else None))
            page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
            response = page.goto(target, wait_until="load", timeout=timeout_s * 1000)
            deadline = time.monotonic() + timeout_s
            while wait_for and not page.evaluate(wait_for):
                if time.monotonic() > deadline:
                    pytest.fail(f"page never satisfied {wait_for!r}; console errors: {errors}", pytrace=False)
                page.wait_for_timeout(100)
            if target.startswith("http"):
                page.wait_for_load_state("networkidle", timeout=timeout_s * 1000)
            results = [page.evaluate(expr) for expr in evaluate]
            if screenshot is not None:
                os.makedirs(Path(screenshot).parent, exist_ok=True)
                page.screenshot(path=str(screenshot), full_page=full_page)
            status = response.status if response is not None and target.startswith("http") else None
            return {"console_errors": errors, "console": messages, "status": status, "evaluate": results,
                    "screenshot": None if screenshot is None else str(screenshot), "title": page.title(),
                    "url": page.url}
        finally:
            browser.close()
