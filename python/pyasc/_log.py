"""Logging: pyasc logs through the standard ``logging`` module, logger ``"pyasc"``.

``set_log_level("DEBUG")`` (or the environment variable ``PYASC_LOG=DEBUG``) shows the
trace, every compiler pass, the fusion decisions and each kernel launch with its time.
"""

from __future__ import annotations

import logging
import os
from typing import Union

from . import _pyasc

logger = logging.getLogger("pyasc")

_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "WARN": 30, "ERROR": 40, "CRITICAL": 50, "OFF": 100}


def set_log_level(level: Union[str, int]) -> None:
    """Set the level of the ``pyasc`` logger: ``"DEBUG"``, ``"INFO"``, ``"WARNING"``, ``"ERROR"`` or an int.

    A handler printing to stderr is added when neither the ``pyasc`` logger nor the root
    logger has one, so the records are visible in a plain script or notebook.
    """
    from .errors import InvalidArgumentError

    if isinstance(level, str):
        key = level.strip().upper()
        if key not in _LEVELS:
            raise InvalidArgumentError(f"unknown log level {level!r}; use one of {sorted(_LEVELS)}")
        value = _LEVELS[key]
    elif isinstance(level, int) and not isinstance(level, bool):
        value = level
    else:
        raise InvalidArgumentError(f"log level must be a name or an int, not {type(level).__name__}")
    logger.setLevel(value)
    _pyasc.set_native_log_level(value)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[pyasc %(levelname)s] %(message)s"))
        logger.addHandler(handler)


def _init_from_env() -> None:
    """Apply ``PYASC_LOG``; an invalid value is left to the import-time warning, never raised."""
    level = os.environ.get("PYASC_LOG")
    if level and level.strip().upper() in _LEVELS:
        set_log_level(level)
