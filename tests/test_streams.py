"""Streams and events: asynchronous launches, ordering, errors at synchronisation, threads."""

from __future__ import annotations

import resource
import threading
import time

import numpy as np
import pyasc
import pytest


def _heavy():
    @pyasc.operator
    def heavy(x):
        for _ in range(8):
            x = pyasc.sin(x) * 1.0001 + pyasc.cos(x)
        return x

    return heavy


def test_launch_returns_before_its_work_completes():
    heavy = _heavy()
    x = pyasc.to_device(np.random.default_rng(0).standard_normal(1 << 22))
    heavy(x).numpy()  # compile and warm up
    s = pyasc.Stream()
    with pyasc.stream(s):
        t = time.perf_counter()
        y = heavy(x)
        launch = time.perf_counter() - t
        busy = not s.query()
    t = time.perf_counter()
    s.synchronize()
    run = time.perf_counter() - t
    assert busy, "the stream was already idle right after the launch"
    assert launch < run, (launch, run)
    assert s.query()
    ref = np.asarray(x).copy()
    for _ in range(8):
        ref = np.sin(ref) * 1.0001 + np.cos(ref)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_numpy_waits_for_the_producing_work_on_any_stream():
    heavy = _heavy()
    x = pyasc.to_device(np.linspace(-3, 3, 1 << 20))
    streams = [pyasc.Stream() for _ in range(3)]
    outs = []
    for s in streams:
        with pyasc.stream(s):
            outs.append(heavy(x))
    # A consumer on the default stream reads a result of another stream: ordered automatically.
    total = pyasc.operator(lambda a, b, c: a + b + c)(*outs)
    np.testing.assert_allclose(total.numpy(), 3 * outs[0].numpy(), rtol=1e-15)


def test_ten_thousand_launches_over_four_streams_with_events_are_exact():
    inc = pyasc.operator(lambda v: v + 1)
    streams = [pyasc.Stream() for _ in range(4)]
    y = pyasc.zeros(64, dtype=np.int64)
    prev = None
    for i in range(10_000):
        s = streams[i % 4]
        with pyasc.stream(s):
            if prev is not None:
                s.wait_event(prev)
            y = inc(y)
            prev = s.record_event()
    pyasc.synchronize()
    np.testing.assert_array_equal(y.numpy(), np.full(64, 10_000))
    assert all(s.query() for s in streams)


def test_event_timing_and_queries():
    heavy = _heavy()
    x = pyasc.to_device(np.ones(1 << 20))
    s = pyasc.Stream()
    start, end = pyasc.Event(), pyasc.Event()
    start.record(s)
    with pyasc.stream(s):
        heavy(x)
    end.record(s)
    end.synchronize()
    assert end.query() and start.query()
    ms = start.elapsed_time(end)
    assert 0.0 < ms < 10_000
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.Event().elapsed_time(end)
    pyasc.Event().synchronize()  # never recorded: returns at once
    e = pyasc.Event()
    e.record()  # on the current (default) stream
    e.wait()
    pyasc.current_stream().synchronize()


def test_async_errors_surface_at_the_next_sync_with_the_line_and_the_stream_keeps_working():
    @pyasc.operator(debug=True)
    def risky(x):
        y = x * 2.0
        return pyasc.log(y - 1.0)  # NaN for x < 0.5

    s = pyasc.Stream()
    bad = pyasc.to_device(np.array([1.0, 0.25, 3.0]))
    good = pyasc.to_device(np.array([1.0, 2.0, 3.0]))
    with pyasc.stream(s):
        out = risky(bad)  # returns at once
    with pytest.raises(pyasc.NumericalError) as e:
        out.numpy()
    assert e.value.lineno is not None and "risky_k" in str(e.value) and "NaN" in str(e.value)
    assert e.value.filename == __file__
    with pyasc.stream(s):
        ok = risky(good)
    np.testing.assert_allclose(ok.numpy(), np.log(np.array([1.0, 2.0, 3.0]) * 2 - 1))
    s.synchronize()


def test_debug_checks_on_the_synchronous_path_and_no_checks_without_debug():
    def f(x):
        return pyasc.sqrt(x - 2.0)  # NaN below 2

    x = np.array([4.0, 1.0])
    with pytest.raises(pyasc.NumericalError) as e:
        pyasc.operator(f, debug=True)(x)
    assert "inputs were all finite" in str(e.value)
    assert np.isnan(pyasc.operator(f)(x)[1])
    with pytest.raises(pyasc.NumericalError) as e:
        pyasc.operator(f, debug=True)(np.array([np.nan, 9.0]))
    assert "inputs already held NaN" in str(e.value)


def test_copies_are_stream_ordered():
    heavy = _heavy()
    s = pyasc.Stream()
    x = pyasc.to_device(np.full(1 << 20, 0.5))
    with pyasc.stream(s):
        y = heavy(x)
        x.copy_from(np.zeros(1 << 20))  # must not overwrite x before heavy has read it
    ref = np.full(1 << 20, 0.5)
    for _ in range(8):
        ref = np.sin(ref) * 1.0001 + np.cos(ref)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12)
    assert (x.numpy() == 0).all()
    z = pyasc.DeviceArray((1 << 20,), dtype=np.float64)
    with pyasc.stream(s):
        z.copy_from(y)
    np.testing.assert_array_equal(z.numpy(), y.numpy())


def test_mixed_numpy_and_device_arguments_follow_the_device_rule():
    f = pyasc.operator(lambda a, b: a * b)
    host = np.arange(5.0)
    d = pyasc.to_device(np.full(5, 2.0))
    out = f(host, d)
    host[:] = -1  # the host argument was snapshotted at the call
    assert isinstance(out, pyasc.DeviceArray)
    np.testing.assert_array_equal(out.numpy(), np.arange(5.0) * 2)


def test_operators_and_streams_from_many_threads():
    f = pyasc.operator(lambda a, k: a * k + 1)
    errors = []

    def work(tid):
        try:
            s = pyasc.Stream()
            x = np.arange(1000, dtype=np.int64) + tid
            for i in range(200):
                if i % 2:
                    with pyasc.stream(s):
                        r = f(pyasc.to_device(x), 3).numpy()
                else:
                    r = f(x, 3)
                if not np.array_equal(r, x * 3 + 1):
                    errors.append((tid, i))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert errors == []


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def test_many_small_calls_leave_memory_flat():
    f = pyasc.operator(lambda a: a * 2.0 + 1.0)
    x = np.ones(16)
    d = pyasc.to_device(x)
    for _ in range(20_000):
        f(x)
        f(d)
    pyasc.synchronize()
    rss0, pool0 = _rss_bytes(), pyasc.memory_stats()["bytes_in_use"]
    for _ in range(100_000):
        f(x)
    for _ in range(20_000):
        f(d)
    pyasc.synchronize()
    rss1, pool1 = _rss_bytes(), pyasc.memory_stats()["bytes_in_use"]
    assert pool1 == pool0
    assert rss1 - rss0 < 8 << 20, (rss0, rss1)


@pytest.mark.parametrize("other_stream", [False, True])
def test_copy_from_waits_for_queued_readers(other_stream):
    # Write-after-read across streams: the queued kernel must see the data it was given.
    n = 1 << 22
    x = pyasc.to_device(np.ones(n, np.float32))
    op = pyasc.operator(lambda t: pyasc.exp(pyasc.sin(t)) * 2 + pyasc.erf(t))
    s1, s2 = pyasc.Stream(), pyasc.Stream()
    with pyasc.stream(s1):
        y = op(x)
    if other_stream:
        with pyasc.stream(s2):
            x.copy_from(np.full(n, 5.0, np.float32))
    else:
        x.copy_from(np.full(n, 5.0, np.float32))
    one = np.float64(1.0)
    want = np.exp(np.sin(one)) * 2 + 0.8427007929497149
    np.testing.assert_allclose(y.numpy(), np.full(n, want, np.float32), rtol=1e-6)
    np.testing.assert_array_equal(x.numpy(), np.full(n, 5.0, np.float32))


def test_failed_queued_work_poisons_its_outputs_and_their_consumers():
    x = pyasc.to_device(np.array([1.0, -1.0, 2.0], np.float32))
    y = pyasc.operator(lambda t: np.log(t) * 2, debug=True)(x)
    for read in (lambda: y.numpy(), lambda: y.numpy(), lambda: np.asarray(y),
                 lambda: y.copy_to(np.empty(3, np.float32))):
        with pytest.raises(pyasc.NumericalError):
            read()
    z = pyasc.operator(lambda t: t + 1)(y)
    for _ in range(2):
        with pytest.raises(pyasc.NumericalError):
            z.numpy()
    pyasc.synchronize()
    # Overwriting the whole array makes it valid again; other work is unaffected.
    y.copy_from(np.ones(3, np.float32))
    np.testing.assert_array_equal(y.numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(pyasc.operator(lambda t: t + 1)(x).numpy(), [2.0, 0.0, 3.0])
