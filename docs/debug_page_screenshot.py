"""Take the README's screenshot of the debugger page: the demo in headless Chromium.

Run from the repository root after `pip install '.[test]'` (needs the system's `chromium`):
`python docs/debug_page_screenshot.py` writes docs/debug-page.png.
"""

import os
import sys

import pyasc
from pyasc.debug._demo import run_demo

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from browser_support import open_page  # noqa: E402

server = pyasc.debug.serve(port=0)
demo = run_demo()
shown = pyasc.debug.runs()[-1].id  # log_shifted: the run the NaN check stopped
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "debug-page.png")
ready = "document.body.dataset.loaded === '1' && document.querySelectorAll('.intermediate').length > 0"
result = open_page(f"{server.url}&run={shown}", screenshot=out, wait_for=ready)
server.stop()
print(out, os.path.getsize(out), "bytes; console errors:", result["console_errors"])
