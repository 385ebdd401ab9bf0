"""``python -m pyasc.cli``: the ``pyasc`` command."""

import sys

from . import main

sys.exit(main())
