"""pyasc operators on a distributed LocalCluster: worker processes, memory limits, a worker lost mid-run."""

import os

import numpy as np
import pyasc
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       memory_limit="512MiB", host="127.0.0.1")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pyasc.operator
def total(x):
    return x.sum()


def _gelu64(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _rebuilt_compiles():
    from pyasc.dask._pickle import rebuilt_operators

    return [(op.__name__, op.cache_info().compiles) for op in rebuilt_operators()]


def _exit_once(block, marker):
    """Kill this worker process the first time a block gets here (the marker file says it happened)."""
    if not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        os._exit(1)
    return block


def test_workers_rebuild_the_operator_once_and_compile_once(client):
    @pyasc.operator
    def gelu_local(x):
        return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    x = np.linspace(-4, 4, 64 * 1000, dtype=np.float32).reshape(64, 1000)
    dx = da.from_array(x, chunks=(8, 250))  # 32 chunks of one shape
    out = client.compute(gelu_local(dx)).result()
    np.testing.assert_allclose(out, _gelu64(x), rtol=1e-5, atol=1e-6)
    per_worker = client.run(_rebuilt_compiles)
    compiles = [n for stats in per_worker.values() for name, n in stats if name == "gelu_local"]
    assert compiles and all(n == 1 for n in compiles), per_worker


def test_reduction_over_more_data_than_a_worker_may_hold(client):
    # 3 GiB of float32 made on the workers in 16 MiB chunks, each worker allowed 512 MiB: the
    # per-chunk partial sums let every chunk be freed as soon as it is reduced.
    n = 3 << 28
    x = da.full((n,), 0.5, dtype=np.float32, chunks=1 << 22)
    limits = client.run(lambda dask_worker: dask_worker.memory_manager.memory_limit)
    assert all(v == 512 << 20 for v in limits.values())
    before = set(client.scheduler_info()["workers"])
    got = float(total(x).compute())
    assert got == 0.5 * n  # exact: every partial is a whole number of halves
    assert set(client.scheduler_info()["workers"]) == before  # no worker was restarted for its memory


def test_result_is_correct_after_a_worker_dies_mid_computation(client, tmp_path):
    marker = str(tmp_path / "died")
    x = np.arange(200_000, dtype=np.float32) / 1000
    dx = da.from_array(x, chunks=20_000).map_blocks(_exit_once, marker, meta=np.empty(0, np.float32))
    before = set(client.scheduler_info()["workers"])
    got = float(client.compute(total(dx)).result())
    assert os.path.exists(marker)
    assert got == pytest.approx(x.astype(np.float64).sum(), rel=1e-6)
    client.wait_for_workers(2, timeout=60)
    assert set(client.scheduler_info()["workers"]) != before  # a worker process was replaced


def test_variance_and_argmax_combine_in_the_tree_on_workers(client):
    # Operators defined here pickle by source; the workers build the per-chunk partials from them.
    @pyasc.operator
    def col_std(x, y):
        return np.std(x * 2 + y, axis=0, ddof=1)

    @pyasc.operator
    def first_max(x):
        return np.argmax(x, axis=0)

    rng = np.random.default_rng(9)
    x = (1e4 + rng.standard_normal((4000, 16))).astype(np.float32)
    y = rng.standard_normal(16).astype(np.float32)
    x[[700, 2900], 3] = 1e5  # a tie across chunks: the first index wins
    dx = da.from_array(x, chunks=(500, 8))
    r = col_std(dx, da.from_array(y, chunks=8))
    assert not any("rechunk" in name for name in r.dask.layers)
    got = client.compute(r).result()
    np.testing.assert_allclose(got, np.std((x * np.float32(2) + y).astype(np.float64), axis=0, ddof=1), rtol=1e-5)
    got = client.compute(first_max(dx)).result()
    np.testing.assert_array_equal(got, np.argmax(x, axis=0))
    assert got[3] == 700


def test_nan_reductions_combine_in_the_tree_on_workers(client):
    @pyasc.operator
    def col_nanvar(x):
        return np.nanvar(x * 2, axis=0, ddof=1)

    @pyasc.operator
    def col_nanmax(x):
        return np.nanmax(x - 1, axis=0)

    rng = np.random.default_rng(12)
    x = (100 + rng.standard_normal((3000, 6))).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    x[:, 4] = np.nan  # a column with no value
    x[:500, 1] = np.nan  # the first row chunk of a column
    dx = da.from_array(x, chunks=(500, 3))
    r = col_nanvar(dx)
    assert not any("rechunk" in name for name in r.dask.layers)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanvar((x * np.float32(2)).astype(np.float64), axis=0, ddof=1)
    np.testing.assert_allclose(client.compute(r).result(), want, rtol=1e-5)
    with pytest.warns(RuntimeWarning):
        want = np.nanmax(x - np.float32(1), axis=0)
    np.testing.assert_array_equal(client.compute(col_nanmax(dx)).result(), want)
