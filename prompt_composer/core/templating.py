"""The composer's Jinja environment: the shipped section templates (``templates/*.j2``) under a folder of the
user's own, and the shipped ones compiled ahead of time.

Jinja compiles a template to Python on its first use in a process: lexing, parsing, generating the code and
compiling it took ~15 ms for the twelve sections, the largest part of a warm ``compose`` after the imports. The
package ships that code (:mod:`prompt_composer.core.precompiled`, written by :func:`precompiled_files`), and
:class:`Shipped` hands it to Jinja through Jinja's own hook for compiled code (a bytecode cache that only reads):
for a template whose source is byte for byte one the code was generated from (by its SHA-1, Jinja's own
checksum), by this Jinja version, with these environment options. Anything else (a user's template, an edited
one, another Jinja) is compiled as before. Nothing is written: the code is part of the package, as trusted as the
rest of it, and ``tests/core/test_templating.py`` holds it equal to what Jinja generates from the templates.

A composer without a templates folder of the user's runs the same code without Jinja (:mod:`.sections`); this
environment renders a user's templates, and any section that path refuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import CodeType

import jinja2
from jinja2.bccache import Bucket

from .shipped import PACKAGE, shipped_code


def environment(templates: str | Path | None = None) -> jinja2.Environment:
    """The environment a composer renders with: ``templates/<section>.j2`` from the folder ``templates`` when it
    has it, else the shipped one."""
    loaders: list[jinja2.BaseLoader] = []
    if templates is not None:
        loaders.append(jinja2.FileSystemLoader(str(templates)))
    loaders.append(jinja2.PackageLoader(PACKAGE, "templates"))
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=False,  # plain text prompts, not HTML
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        auto_reload=False,
        bytecode_cache=Shipped(),
    )


def options(env: jinja2.Environment) -> str:
    """What of ``env`` the generated code depends on besides the template's source and Jinja's version."""
    return repr(
        (
            env.block_start_string,
            env.block_end_string,
            env.variable_start_string,
            env.variable_end_string,
            env.comment_start_string,
            env.comment_end_string,
            env.line_statement_prefix,
            env.line_comment_prefix,
            env.trim_blocks,
            env.lstrip_blocks,
            env.newline_sequence,
            env.keep_trailing_newline,
            env.autoescape if isinstance(env.autoescape, bool) else "callable",
            env.optimized,
            sorted(env.extensions),
        )
    )


def precompiled_code(name: str, checksum: str, env: jinja2.Environment) -> CodeType | None:
    """The shipped code of the template ``name`` when its source's checksum, Jinja's version and ``env``'s options
    are those it was generated for; else None (compile it)."""
    try:
        from . import precompiled
    except ImportError:  # a build without it
        return None
    if jinja2.__version__ != precompiled.JINJA2 or options(env) != precompiled.OPTIONS:
        return None
    return shipped_code(name, checksum)


class Shipped(jinja2.BytecodeCache):
    """Jinja's bytecode cache, reading the package's compiled templates (see the module docstring); it never
    writes."""

    def get_bucket(self, environment: jinja2.Environment, name: str, filename: str | None, source: str) -> Bucket:
        bucket = Bucket(environment, self.get_cache_key(name, filename), self.get_source_checksum(source))
        bucket.code = precompiled_code(name, bucket.checksum, environment)
        return bucket

    def set_bucket(self, bucket: Bucket) -> None:
        """Nothing is written."""

    def load_bytecode(self, bucket: Bucket) -> None:
        """Not used: :meth:`get_bucket` fills the bucket."""

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Nothing is written."""


def _literal(text: str) -> str:
    """``text`` as a Python string literal in double quotes, as the formatter writes them."""
    return json.dumps(text)


def precompiled_files() -> dict[str, str]:
    """The files of :mod:`prompt_composer.core.precompiled`, as this Jinja generates them from the shipped
    templates: a module per template (the code ``env.compile`` would compile) and ``__init__.py`` naming, for
    each template, its source's checksum and its module."""
    env = environment()
    loader = jinja2.PackageLoader(PACKAGE, "templates")
    files: dict[str, str] = {}
    entries: list[str] = []
    for name in sorted(loader.list_templates()):
        source, filename, _ = loader.get_source(env, name)
        module = f"{Path(name).stem}_j2"
        files[f"{module}.py"] = str(env.compile(source, name, filename, raw=True))
        checksum = Shipped().get_source_checksum(source)
        entries.append(f"    {_literal(name)}: ({_literal(checksum)}, {_literal(module)}),\n")
    files["__init__.py"] = (
        '"""The shipped section templates compiled by Jinja (see prompt_composer.core.templating). Generated: do not\n'
        "edit. After changing a template, write them again: UPDATE_PRECOMPILED=1 pytest tests/core/test_templating.py"
        '\n"""\n\n'
        f"JINJA2 = {_literal(jinja2.__version__)}\n"
        f"OPTIONS = {_literal(options(env))}\n"
        "# template name: (SHA-1 of its source, Jinja's checksum; the module holding its code)\n"
        f"TEMPLATES: dict[str, tuple[str, str]] = {{\n{''.join(entries)}}}\n"
    )
    return files
