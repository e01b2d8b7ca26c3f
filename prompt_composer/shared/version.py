"""The package version, in one place every layer may import (the package root imports nothing eagerly)."""

VERSION = "0.1.0"
