"""The NumPy-style function library.

Creation, movement, reductions, scans, selection, sorting, statistics, in-place updates,
contractions, matrices and ``pyasc.linalg``. Each function records nodes on traced tensors inside
an operator and runs at once on arrays outside one.
"""
