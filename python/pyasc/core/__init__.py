"""The operator core: decorators, the class form, dynamic shapes and precision scopes.

Also the traced tensor's NumPy protocols and methods, and the companions (complex numbers,
pytrees) that register with :mod:`pyasc._hooks`.
"""
