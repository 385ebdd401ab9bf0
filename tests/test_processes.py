"""pyasc across processes and signals: a forked child (``os.fork``, ``multiprocessing`` with the
fork start method) keeps working after the parent has started pyasc's threads, and Ctrl-C
(SIGINT) interrupts long kernels and waits promptly, leaving pyasc usable.

Each scenario runs in a fresh interpreter with a timeout, so a hang is a failure rather than a
stuck test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork and SIGINT are POSIX")

COMMON = """
import math, os, signal, sys, threading, time
# Python's Ctrl-C handler even when this run inherited SIGINT ignored (a shell's background job).
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import pyasc

def gelu_ref(x):
    x = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    return x * 0.5 * (1.0 + erf(x / 1.41421))

@pyasc.operator
def gelu(x):
    return x * 0.5 * (1.0 + pyasc.erf(x / 1.41421))

def close(got, want, rtol=1e-5, atol=1e-6):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.allclose(got.astype(np.float64), want, rtol=rtol, atol=atol), float(np.max(np.abs(got - want)))

rng = np.random.default_rng(0)
# Large enough to run on all worker threads (the launch team and the pool exist afterwards).
x = rng.standard_normal(1 << 17).astype(np.float32)
want = gelu_ref(x)
"""


def run_script(tmp_path, body: str, prefix: str = "", timeout: float = 120.0) -> str:
    """Run COMMON, prefix and body in a new interpreter; fail on a non-zero exit or a hang."""
    path = tmp_path / "scenario.py"
    path.write_text(COMMON + prefix + textwrap.dedent(body))
    env = dict(os.environ, PYASC_NUM_THREADS=os.environ.get("PYASC_NUM_THREADS", "2"))
    try:
        done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the scenario hung for {timeout} s:\n{e.stdout}\n{e.stderr}")
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done.stdout


def test_forked_child_runs_operators_streams_and_device_arrays(tmp_path):
    out = run_script(
        tmp_path,
        """
        close(gelu(x), want)
        s = pyasc.Stream()
        d = pyasc.to_device(x)
        with pyasc.stream(s):
            y_parent = gelu(d)
        s.synchronize()
        a = rng.standard_normal((256, 512)).astype(np.float32)
        b = rng.standard_normal((512, 384)).astype(np.float32)

        @pyasc.operator
        def mm(a, b):
            return a @ b

        close(mm(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
        # Work still queued on the parent's stream while it forks runs to completion there.
        with pyasc.stream(s):
            queued = gelu(d)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                close(gelu(x), want)                       # run now, all workers
                close(gelu(x[:100]), want[:100])           # small: calling thread only
                close(mm(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
                # `queued` either finished before the fork or was cut off by it: then it is
                # reported once by the stream and its output raises instead of being garbage.
                try:
                    s.synchronize()
                    close(queued.numpy(), want)
                except pyasc.DeviceError as e:
                    assert "forked" in str(e), e
                    try:
                        queued.numpy()
                    except pyasc.DeviceError as e2:
                        assert "forked" in str(e2), e2
                    else:
                        raise AssertionError("read the output of a task lost in the fork")
                close(y_parent.numpy(), want)              # made and synchronised in the parent
                with pyasc.stream(s):                      # the parent's stream, new worker
                    y1 = gelu(d)
                s.synchronize()
                close(y1.numpy(), want)
                s2 = pyasc.Stream()
                e = pyasc.Event()
                with pyasc.stream(s2):
                    d2 = pyasc.to_device(-x)
                    y2 = gelu(d2)
                    e.record()
                e.synchronize()
                close(y2.numpy(), gelu_ref(-x))
                y3 = gelu(pyasc.to_device(x))               # default stream
                pyasc.synchronize()
                close(y3.numpy(), want)
                big = pyasc.empty((1 << 20,), np.float32)   # a parallel copy on the pool
                src = rng.standard_normal(1 << 20).astype(np.float32)
                big.copy_from(src)
                assert np.array_equal(big.numpy(), src)
                status = 0
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        close(queued.numpy(), want)
        close(gelu(x), want)                               # the parent is unaffected
        print("ok")
        """,
    )
    assert out.strip() == "ok"


FORK_CHILDREN = """
def fork_children():
        for _ in range(10):
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    import faulthandler
                    faulthandler.dump_traceback_later(20, exit=True)   # where a hang is
                    close(gelu(x), want)
                    y = gelu(pyasc.to_device(x))
                    close(y.numpy(), want)
                    try:
                        pyasc.synchronize()
                    except pyasc.DeviceError as e:
                        # A busy thread's task was cut off by the fork: reported once.
                        assert "forked" in str(e), e
                    pyasc.synchronize()
                    status = 0
                except BaseException:
                    import traceback
                    traceback.print_exc()
                finally:
                    sys.stderr.flush()
                    os._exit(status)
            t0 = time.monotonic()
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() - t0 > 30:
                    os.kill(pid, signal.SIGKILL)
                    raise AssertionError("a forked child hung")
                time.sleep(0.01)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
"""


def test_fork_while_other_threads_launch_and_allocate(tmp_path):
    # Other threads are inside pyasc (launches, pool allocations, stream bookkeeping) at the
    # moment of each fork: no lock they hold may leave a child stuck.
    out = run_script(
        tmp_path,
        prefix=FORK_CHILDREN,
        body="""
        stop = threading.Event()

        def busy(k):
            s = pyasc.Stream()
            while not stop.is_set():
                gelu(x)
                with pyasc.stream(s):
                    y = gelu(pyasc.to_device(x[: 1000 * (k + 1)]))
                y.numpy()

        threads = [threading.Thread(target=busy, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        try:
            fork_children()
        finally:
            stop.set()
            for t in threads:
                t.join()
        print("ok")
        """,
    )
    assert out.strip() == "ok"


def test_multiprocessing_fork_pool_runs_operators(tmp_path):
    out = run_script(
        tmp_path,
        """
        import multiprocessing as mp

        def work(i):
            xi = (x * (i + 1)).astype(np.float32)
            return float(np.abs(np.asarray(gelu(xi), np.float64) - gelu_ref(xi)).max())

        close(gelu(x), want)
        with mp.get_context("fork").Pool(2) as pool:
            errors = pool.map(work, range(6))
        assert len(errors) == 6 and max(errors) < 1e-4, errors
        close(gelu(x), want)
        print("ok")
        """,
    )
    assert out.strip() == "ok"


SIGINT_HELPERS = """
# A fused chain of 160 transcendental ops over 16M elements: several seconds of one kernel.
@pyasc.operator
def slow(x):
    y = x
    for _ in range(40):
        y = pyasc.sin(y) + pyasc.cos(y) * 0.5
        y = pyasc.tanh(y) + pyasc.exp(-y * y)
    return y

def slow_ref(x):
    y = x.astype(np.float64)
    for _ in range(40):
        y = np.sin(y) + np.cos(y) * 0.5
        y = np.tanh(y) + np.exp(-y * y)
    return y

big = rng.standard_normal(1 << 24).astype(np.float32)
small = big[:5000].copy()
close(slow(small), slow_ref(small), rtol=1e-4, atol=1e-5)      # compiled, warm

def interrupt_after(delay):
    sent = []
    def fire():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)
    t = threading.Timer(delay, fire)
    t.start()
    return t, sent

def expect_interrupt(what, call, delay=0.3):
    t, sent = interrupt_after(delay)
    began = time.monotonic()
    try:
        call()
    except KeyboardInterrupt:
        caught = time.monotonic()
    else:
        raise AssertionError(f"{what}: finished after {time.monotonic() - began:.2f} s without an interrupt")
    t.join()
    latency = caught - sent[0]
    print(f"{what}: KeyboardInterrupt {latency * 1000:.1f} ms after SIGINT")
    assert latency < 0.5, latency
    return latency
"""


def test_sigint_interrupts_a_long_synchronous_kernel(tmp_path):
    out = run_script(
        tmp_path,
        prefix=SIGINT_HELPERS,
        body="""
        result = []
        expect_interrupt("kernel run now", lambda: result.append(slow(big)))
        assert result == []                                  # no output was returned
        close(slow(small), slow_ref(small), rtol=1e-4, atol=1e-5)
        close(gelu(x), want)
        print("ok")
        """,
    )
    assert out.strip().endswith("ok")
    print(out)


def test_sigint_interrupts_long_sorts_scans_top_k_and_matmul(tmp_path):
    # Library routines check the cancellation between pieces of work: a sort or scan of 2**32
    # broadcast elements (tens of seconds) or one 6000x6000 product stops as promptly as a tile
    # kernel.
    out = run_script(
        tmp_path,
        prefix=SIGINT_HELPERS,
        body="""
        huge = np.broadcast_to(np.float32(1.5), (1 << 16, 1 << 16))
        sort_op = pyasc.operator(lambda t: np.sort(t, axis=1)[:, :2])
        scan_op = pyasc.operator(lambda t: np.cumsum(t, axis=1)[:, -1:])
        topk_op = pyasc.operator(lambda t: pyasc.topk(t, 3)[0])
        for name, op in (("sort", sort_op), ("cumsum", scan_op), ("topk", topk_op)):
            expect_interrupt(name, lambda: op(huge))
        # One large product (seconds on a few cores) stops between pieces of it.
        square = np.broadcast_to(np.float32(1.5), (6000, 6000))
        mm_op = pyasc.operator(lambda a: a @ a)
        expect_interrupt("matmul 6000x6000", lambda: mm_op(square), delay=0.5)
        sq = rng.standard_normal((50, 50)).astype(np.float32)
        close(mm_op(sq), sq.astype(np.float64) @ sq.astype(np.float64), rtol=1e-4, atol=1e-4)
        # Rows short enough for a tile scan inside a fused row kernel, checked tile by tile.
        rows_op = pyasc.operator(lambda t: np.cumsum(t * 2, axis=1)[:, -1:])
        expect_interrupt("fused cumsum", lambda: rows_op(np.broadcast_to(np.float32(1.5), (1 << 18, 1 << 14))))
        row = np.arange(8, dtype=np.float32)[::-1].copy()
        close(sort_op(np.broadcast_to(row, (3, 8))), np.sort(np.broadcast_to(row, (3, 8)), axis=1)[:, :2])
        close(scan_op(np.broadcast_to(row, (3, 8))), np.cumsum(np.broadcast_to(row, (3, 8)), axis=1)[:, -1:])
        close(rows_op(np.broadcast_to(row, (3, 8))), np.cumsum(np.broadcast_to(row, (3, 8)) * 2, axis=1)[:, -1:])
        print("ok")
        """,
    )
    assert out.strip().endswith("ok")
    print(out)


def test_sigint_interrupts_stream_and_event_waits(tmp_path):
    out = run_script(
        tmp_path,
        prefix=SIGINT_HELPERS,
        body="""
        d = pyasc.to_device(big)
        s = pyasc.Stream()
        with pyasc.stream(s):
            y = slow(d)
        expect_interrupt("Stream.synchronize", s.synchronize)
        # The cancelled kernel's output is invalid: reading it raises, never returns garbage.
        try:
            y.numpy()
        except pyasc.DeviceError as e:
            assert "interrupted" in str(e), e
        else:
            raise AssertionError("read the output of an interrupted kernel")
        # The stream stopped the old kernel: new work on it is prompt and right.
        t0 = time.monotonic()
        with pyasc.stream(s):
            z = slow(pyasc.to_device(small))
        close(z.numpy(), slow_ref(small), rtol=1e-4, atol=1e-5)
        s.synchronize()
        assert time.monotonic() - t0 < 2.0, time.monotonic() - t0

        with pyasc.stream(s):
            y = slow(d)
            e = pyasc.Event()
            e.record()
        expect_interrupt("Event.synchronize", e.synchronize)
        expect_interrupt("pyasc.synchronize", pyasc.synchronize, delay=0.1)
        with pyasc.stream(s):
            z = slow(pyasc.to_device(small))
        close(z.numpy(), slow_ref(small), rtol=1e-4, atol=1e-5)
        pyasc.synchronize()
        e.synchronize()
        close(gelu(x), want)
        print("ok")
        """,
    )
    assert out.strip().endswith("ok")
    print(out)
