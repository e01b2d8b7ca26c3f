"""The package version and distribution name, in one place every layer may import (the package root imports
nothing eagerly)."""

VERSION = "0.1.0"

DISTRIBUTION = "prompt-composer-tooldocs"
"""The name pip knows this project by; the command stays ``prompt-composer`` and the import package
``prompt_composer``. Not ``prompt-composer``: ``pip install prompt-composer`` installs an unrelated project
from PyPI, with the same import package, whose files would replace these."""
