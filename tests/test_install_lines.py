"""Every install line the project shows (README, docs, examples, CI, error hints) installs this project: never
PyPI's ``prompt-composer``, an unrelated project that installs the same import package ``prompt_composer``."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from prompt_composer.shared.extras import EXTRA_MODULES, install_line, needs_extra
from prompt_composer.shared.version import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[1]
OTHER_PROJECT = "prompt-composer"  # PyPI's, normalized (PEP 503)
INSTALL = re.compile(r"\bpip3?\s+install\s+(?P<args>[^\n`]*)")
SHOWN = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / ".ci" / "run",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "docs" / "examples").iterdir()),
    *sorted((ROOT / "prompt_composer").rglob("*.py")),
    *sorted((ROOT / "benchmarks").rglob("*.py")),
]


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(args: str) -> list[str]:
    """The requirement arguments of one ``pip install`` line (options, and the files of -r/-c, left out)."""
    args = re.split(r"\s(?:&&|\|\||;|\||#)\s?", args, maxsplit=1)[0]
    try:
        tokens = shlex.split(args)
    except ValueError:  # a line inside a Python string or a table cell: quoted parts, or words
        tokens = [q or w.strip("\"'") for q, w in re.findall(r"'([^']*)'|(\S+)", args)]
    found, skip = [], False
    for token in tokens:
        if skip:
            skip = False
        elif token in ("-r", "--requirement", "-c", "--constraint", "-e", "--editable", "--target", "-t", "-d"):
            skip = token not in ("-e", "--editable")
        elif not token.startswith("-"):
            found.append(token)
    return found


def what_it_fetches(requirement: str) -> str:
    """``path`` (a folder, a wheel, a file), ``url NAME`` (``NAME @ URL``), ``template`` (a line built in code)
    or ``registry NAME``: the only kind that asks the package index for NAME."""
    if requirement.startswith((".", "/", "~", "$", "{")) or requirement.endswith(".whl"):
        return "template" if requirement.startswith(("{", "$")) else "path"
    if " @ " in requirement:
        return f"url {normalized(requirement.split(' @ ', 1)[0].split('[')[0].strip())}"
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    return f"registry {normalized(name.group(0))}" if name else "template"


WARNING = re.compile(r"another project|unrelated project")


def install_lines() -> list[tuple[str, str]]:
    """(``path:line``, requirement) of every install line shown. A line that warns against the other project (it
    names it and, within its sentence, says it is another one) is a warning, not an install line."""
    lines = []
    for path in SHOWN:
        text = path.read_text(encoding="utf-8")
        for match in INSTALL.finditer(text):
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
            warns = WARNING.search(text[max(0, match.start() - 40) : match.end() + 120]) is not None
            lines.extend(
                (where, req) for req in requirements(match["args"]) if not (warns and req == "prompt-composer")
            )
    return lines


def test_the_classifier_tells_the_other_project_from_this_one() -> None:
    assert what_it_fetches("prompt-composer") == "registry prompt-composer"
    assert what_it_fetches("prompt_composer[mcp]") == "registry prompt-composer"
    assert what_it_fetches("Prompt.Composer==0.2.0") == "registry prompt-composer"
    assert what_it_fetches("prompt-composer @ git+https://example.invalid/x") == "url prompt-composer"
    assert what_it_fetches(".[dev]") == "path" and what_it_fetches("dist/x.whl") == "path"
    assert requirements("-q --no-deps bfcl-eval==1 && prompt-composer audit") == ["bfcl-eval==1"]
    assert requirements("'.[dev]'  # with extras") == [".[dev]"]


def test_no_install_line_fetches_the_unrelated_project() -> None:
    lines = install_lines()
    assert len(lines) >= 20, lines  # the pattern still finds the install lines
    wrong = [(where, req) for where, req in lines if what_it_fetches(req).endswith(f" {OTHER_PROJECT}")]
    assert not wrong, wrong


def test_this_project_from_the_registry_only_with_an_extra() -> None:
    """The name alone is not on PyPI: a bare ``pip install prompt-composer-tooldocs`` would find nothing (or
    whatever someone published under it). With an extra, pip takes the project from what is installed and
    fetches only the extra's packages: that is the form the errors give (tests/test_install.py runs it)."""
    ours = normalized(DISTRIBUTION)
    for where, requirement in install_lines():
        if what_it_fetches(requirement) == f"registry {ours}":
            assert re.fullmatch(rf"{re.escape(DISTRIBUTION)}\[[a-z,]+\]", requirement), (where, requirement)


def test_pyproject_names_this_distribution_and_its_extras_refer_to_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION and normalized(DISTRIBUTION) != OTHER_PROJECT
    assert project["scripts"] == {"prompt-composer": "prompt_composer.cli:run"}
    extras = project["optional-dependencies"]
    for requirement in [*project["dependencies"], *(r for reqs in extras.values() for r in reqs)]:
        name = normalized(re.match(r"[A-Za-z0-9._-]+", requirement).group(0))  # type: ignore[union-attr]
        assert name != OTHER_PROJECT, requirement  # `dev` names this project's extras by its own name
    assert set(EXTRA_MODULES.values()) <= set(extras)  # every extra a hint names exists


def test_the_hint_is_one_line_naming_the_extra() -> None:
    assert install_line("mcp") == f"pip install '{DISTRIBUTION}[mcp]'"
    assert needs_extra("serve", "mcp") == f"serve needs the 'mcp' extra: pip install '{DISTRIBUTION}[mcp]'"
