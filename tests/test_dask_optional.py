"""pyasc imports and runs every operator kind when Dask cannot be imported."""

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent('''
    import sys

    class NoDask:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("dask", "distributed"):
                raise ImportError("dask is blocked in this test")
            return None

    sys.meta_path.insert(0, NoDask())
    import numpy as np
    import pyasc

    @pyasc.operator
    def axpy(a, x, y):
        return a * x + y

    @pyasc.vectorized_operator
    def relu(x):
        return x if x > 0 else 0.0

    @pyasc.stencil_operator(boundary="nearest")
    def avg(u):
        return (u[-1] + u[0] + u[1]) / 3

    x = np.arange(10, dtype=np.float32)
    assert np.allclose(axpy(2.0, x, x), 3 * x)
    assert np.allclose(relu(x - 5), np.maximum(x - 5, 0))
    assert np.allclose(avg(x)[1:-1], x[1:-1])
    import pickle
    assert np.allclose(pickle.loads(pickle.dumps(axpy))(2.0, x, x), 3 * x)
    assert not any(m.split(".")[0] in ("dask", "distributed") for m in sys.modules)
    print("ok")
''')


def test_pyasc_runs_without_dask(tmp_path):
    script = tmp_path / "nodask.py"
    script.write_text(PROGRAM)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
