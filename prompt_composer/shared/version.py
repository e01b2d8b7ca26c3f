"""The package version and distribution name, in one place every layer may import (the package root imports
nothing eagerly)."""

VERSION = "0.1.0"

DISTRIBUTION = "prompt-composer-tooldocs"
"""The name pip knows this project by; the command stays ``prompt-composer`` and the import package
``prompt_composer``. Not ``prompt-composer``: that name on PyPI is an unrelated project that installs the same
import package, so ``pip install prompt-composer`` would replace this code with its own."""
