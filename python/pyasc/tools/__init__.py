"""Looking at runs: the profiler, its HTML report and Chrome trace, and timing helpers.

The timing helpers are shared by ``pyasc demo`` and ``pyasc bench``.
"""
