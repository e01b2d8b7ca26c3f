"""``python -m prompt_composer.testing``: the scripted test server's command line (see :mod:`.cli`)."""

import sys

from .cli import main

sys.exit(main())
