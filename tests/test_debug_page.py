"""The debugger page as a user sees it: a token-guarded local server, its JSON, the page in headless Chromium."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from urllib.parse import urlparse

import numpy as np
import pyasc
import pytest
from browser_support import open_page


@pyasc.operator(debug=True)
def page_steps(x, w):
    a = x * 2.0
    b = np.exp(a - 1.0)
    c = b / b.sum(axis=1, keepdims=True)
    return c @ w


def fetch(url, headers=None):
    """(status, body) of a GET."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def api(server, path):
    status, body = fetch(f"http://127.0.0.1:{server.port}{path}?token={server.token}")
    assert status == 200, body
    return json.loads(body)


@pytest.fixture
def server():
    s = pyasc.debug.serve(port=0)
    yield s
    s.stop()


@pytest.fixture
def inputs():
    rng = np.random.default_rng(5)
    return rng.standard_normal((48, 80)).astype(np.float32), rng.standard_normal((80, 16)).astype(np.float32)


def test_requests_without_the_token_get_403(server):
    base = f"http://127.0.0.1:{server.port}"
    assert urlparse(server.url).hostname == "127.0.0.1" and f"token={server.token}" in server.url
    assert len(server.token) >= 32
    wrong = server.token[:-1] + ("1" if server.token[-1] == "0" else "0")
    for path in ("/", "/api/operators", "/api/runs", "/api/runs/1", "/?token=", "/?token=" + wrong):
        status, _ = fetch(base + path)
        assert status == 403, path
    assert fetch(server.url)[0] == 200
    assert fetch(base + "/api/runs", {"Authorization": f"token {server.token}"})[0] == 200
    assert fetch(base + "/api/nothing?token=" + server.token)[0] == 404


def test_server_lists_operators_and_each_ops_result(server, inputs):
    x, w = inputs
    assert pyasc.debug.active()
    y = page_steps(x, w)
    ops = {o["name"]: o for o in api(server, "/api/operators")["operators"]}
    assert ops["page_steps"]["debug"] is True and ops["page_steps"]["runs"] == 1
    assert ops["page_steps"]["compiles"] == 1
    (run,) = api(server, "/api/runs")["runs"]
    assert run["operator"] == "page_steps" and run["intermediates"] == 6
    detail = api(server, f"/api/runs/{run['id']}")
    its = detail["intermediates"]
    assert [i["op"] for i in its] == ["mul", "sub", "exp", "reduce_sum", "div", "matmul"]
    x64 = x.astype(np.float64)
    first = its[0]
    assert first["shape"] == [48, 80] and first["dtype"] == "float32"
    assert first["min"] == pytest.approx((2 * x64).min(), rel=1e-6)
    assert first["max"] == pytest.approx((2 * x64).max(), rel=1e-6)
    assert first["source"] == "a = x * 2.0" and first["locations"][0]["file"] == __file__
    assert first["heatmap"]["block"] == [1, 2] and (first["heatmap"]["rows"], first["heatmap"]["cols"]) == (48, 40)
    assert sum(first["histogram"]["counts"]) == x.size
    values = api(server, f"/api/runs/{run['id']}/5/values")
    np.testing.assert_allclose(values["values"], y.reshape(-1), rtol=1e-6)


def test_server_stop_releases_the_port_and_the_results(inputs):
    x, w = inputs
    s = pyasc.debug.serve(port=0)
    page_steps(x, w)
    assert len(pyasc.debug.runs()) == 1
    port = s.port
    s.stop()
    assert not pyasc.debug.active() and pyasc.debug.runs() == []
    again = pyasc.debug.serve(port=port)  # the port is free again
    try:
        with pytest.raises(pyasc.InvalidArgumentError, match=f"cannot serve on 127.0.0.1:{port}"):
            pyasc.debug.serve(port=port)
    finally:
        again.stop()
    for bad in (-1, 70000, "9090", True):
        with pytest.raises(pyasc.InvalidArgumentError, match="port must be"):
            pyasc.debug.serve(port=bad)
    assert not pyasc.debug.active()


def test_runs_beyond_the_limit_drop_the_oldest(server, monkeypatch):
    from pyasc.debug import _store

    monkeypatch.setattr(_store, "MAX_RUNS", 3)
    x, w = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    for _ in range(5):
        page_steps(x, w)
    ids = [r.id for r in pyasc.debug.runs()]
    assert len(ids) == 3 and ids == sorted(ids)


def test_page_in_headless_chromium_shows_operators_and_intermediates(server, inputs, tmp_path):
    x, w = inputs
    page_steps(x, w)
    shot = str(tmp_path / "page.png")
    ready = "document.body.dataset.loaded === '1' && document.querySelectorAll('.intermediate').length > 0"
    r = open_page(server.url, screenshot=shot, wait_for=ready,
                  evaluate=[
                      "[...document.querySelectorAll('#operators li[data-op]')].map(e => e.dataset.op)",
                      "[...document.querySelectorAll('.intermediate')].map(e => e.querySelector('.op').textContent)",
                      "[...document.querySelectorAll('.intermediate .code')].map(e => e.textContent)",
                      "document.querySelectorAll('.intermediate svg.hist rect.bar').length",
                      "document.querySelectorAll('.intermediate canvas.heat').length",
                      "document.querySelector('.intermediate [data-stat=shape]').textContent",
                      "document.querySelector('#run-head h2').textContent",
                      # hover over the first heatmap's cell (row 3, cols 4-5): its title names it
                      """(() => { const c = document.querySelector('.intermediate canvas.heat');
                                  const s = c.width / 40, b = c.getBoundingClientRect();
                                  c.dispatchEvent(new MouseEvent('mousemove', {clientX: b.left + 2.5 * s,
                                                                               clientY: b.top + 3.5 * s}));
                                  return c.title; })()""",
                  ])
    assert r["status"] == 200
    assert r["console_errors"] == []
    operators, ops, code, bars, heatmaps, shape, head, hover = r["evaluate"]
    cell = (2.0 * x[3, 4:6].astype(np.float64)).mean()
    assert hover.startswith("row 3, cols 4\u20135: mean ")
    assert float(hover.rsplit(" ", 1)[1]) == pytest.approx(cell, rel=1e-4)
    assert "page_steps" in operators
    assert ops == ["0. mul", "1. sub", "2. exp", "3. reduce_sum", "4. div", "5. matmul"]
    assert code[0] == "a = x * 2.0" and code[3] == "c = b / b.sum(axis=1, keepdims=True)"
    assert bars == 6 * 32
    assert heatmaps == 6  # every result is 2-D
    assert shape == "(48, 80)" and head == f"Run #{pyasc.debug.runs()[-1].id}: page_steps"
    assert os.path.getsize(shot) > 10_000


def test_page_without_the_token_is_refused_in_the_browser(server):
    r = open_page(f"http://127.0.0.1:{server.port}/", evaluate=["document.body.innerText"])
    assert r["status"] == 403
    assert "403" in r["evaluate"][0] and "pyasc debugger" not in r["evaluate"][0]


def test_cli_serves_a_scripts_debug_runs(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""\
        import sys
        import numpy as np
        import pyasc

        @pyasc.operator(debug=True)
        def scaled(x):
            return np.sqrt(x * 3.0)

        print("argv", sys.argv[1:], scaled(np.arange(6, dtype=np.float32).reshape(2, 3)).sum(), flush=True)
        """))
    # The CLI with Python's Ctrl-C handler installed even when this run inherited SIGINT ignored
    # (a shell's background job), since the server is stopped with SIGINT below.
    cli = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "sys.argv = ['pyasc'] + sys.argv[1:]; runpy.run_module('pyasc.cli', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", cli, "debug", "serve", "--port", "0", "--",
                             "python", str(script), "--flag"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        url = lines[0].split("pyasc debugger: ")[1].strip()
        assert lines[1].startswith("argv ['--flag']")
        assert "1 debug runs captured" in lines[2]
        parsed = urlparse(url)
        base = f"http://127.0.0.1:{parsed.port}"
        assert fetch(base + "/api/runs")[0] == 403
        status, body = fetch(f"{base}/api/runs?{parsed.query}")
        assert status == 200
        (run,) = json.loads(body)["runs"]
        detail = json.loads(fetch(f"{base}/api/runs/{run['id']}?{parsed.query}")[1])
        assert [i["op"] for i in detail["intermediates"]] == ["mul", "sqrt"]
        assert detail["intermediates"][1]["source"] == "return np.sqrt(x * 3.0)"
        assert detail["intermediates"][1]["max"] == pytest.approx(np.sqrt(15.0), rel=1e-6)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


def test_cli_demo_and_bad_commands():
    run = subprocess.run([sys.executable, "-m", "pyasc.cli", "debug", "serve", "--port", "0", "--exit-after"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "3 debug runs captured" in run.stdout
    assert "(the op at <pyasc debug demo>:21)" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "pyasc.cli", "debug", "serve", "--port", "0", "--", "ls"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "no such script: ls" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "pyasc.cli", "debug", "serve", "--port", "0", "--", "python", "-c",
                          "1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "give a Python script" in bad.stderr


def test_a_port_in_use_is_a_clear_cli_error(server):
    run = subprocess.run([sys.executable, "-m", "pyasc.cli", "debug", "serve", "--port", str(server.port),
                          "--exit-after"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and f"cannot serve on 127.0.0.1:{server.port}" in run.stderr
    time.sleep(0)  # the server of the fixture still answers
    assert fetch(server.url)[0] == 200


def test_a_foreign_host_header_gets_403(server):
    assert fetch(server.url, {"Host": "evil.example:80"})[0] == 403
    assert fetch(server.url, {"Host": f"localhost:{server.port}"})[0] == 200


def test_the_store_keeps_at_most_max_bytes_but_always_the_newest_run(server, monkeypatch):
    from pyasc.debug import _store

    x, w = np.ones((16, 32), np.float32), np.ones((32, 8), np.float32)
    page_steps(x, w)
    one = pyasc.debug.runs()[0].nbytes
    assert one == 4 * (4 * 16 * 32 + 16 + 16 * 8)  # mul, sub, exp, div: 16x32; the row sums; the product
    monkeypatch.setattr(_store, "MAX_BYTES", 2 * one + 1)
    for _ in range(3):
        page_steps(x, w)
    assert len(pyasc.debug.runs()) == 2
    monkeypatch.setattr(_store, "MAX_BYTES", 1)
    page_steps(x, w)
    (kept,) = pyasc.debug.runs()
    assert kept.id == max(r.id for r in pyasc.debug.runs())
    assert api(server, "/api/runs")["runs"][0]["nbytes"] == one


def test_choosing_a_run_in_the_browser_shows_its_results(server):
    @pyasc.operator(debug=True)
    def halve(x):
        return x * 0.5

    page_steps(np.ones((3, 4), np.float32), np.ones((4, 2), np.float32))
    halve(np.arange(4, dtype=np.float32))
    first, second = (r.id for r in pyasc.debug.runs())
    click = f"""(async () => {{
        document.querySelector('#runs li[data-run="{first}"]').click();
        for (let i = 0; i < 100 && document.querySelector('#run-head').dataset.run !== '{first}'; i++)
            await new Promise(r => setTimeout(r, 50));
        return [document.querySelector('#run-head h2').textContent, location.search.includes('run={first}'),
                document.querySelectorAll('.intermediate').length];
    }})()"""
    r = open_page(server.url, wait_for="document.body.dataset.loaded === '1'",
                  evaluate=["document.querySelector('#run-head h2').textContent",
                            "document.querySelector('.intermediate [data-stat=max]').textContent", click])
    assert r["console_errors"] == []
    assert r["evaluate"][0] == f"Run #{second}: halve" and r["evaluate"][1] == "1.5"
    assert r["evaluate"][2] == [f"Run #{first}: page_steps", True, 6]
    deep = open_page(f"{server.url}&run={first}", wait_for="document.body.dataset.loaded === '1'",
                     evaluate=["document.querySelector('#run-head h2').textContent"])
    assert deep["evaluate"] == [f"Run #{first}: page_steps"] and deep["console_errors"] == []


def test_a_missing_chromium_fails_with_the_install_command(monkeypatch):
    import browser_support

    monkeypatch.setattr(browser_support.shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="chromium not found on PATH.*apt-get install -y chromium"):
        browser_support.open_page("about:blank")
