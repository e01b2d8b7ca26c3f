"""Tiers: a large mode's tools as full, brief, catalog lines or names, sized to a share of the context; loading
appends and never touches the prefix; no tier ever shows a tool outside the mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prompt_composer import Composer, LoadError, Registry, load_registry, run_audit
from prompt_composer.core.modes import ModeConfig, TierConfig
from prompt_composer.core.tiers import SUMMARY_WORDS, summary
from tests.helpers import make_doc, make_mode


def registry(share: float = 1.0, context: int = 200_000, *, usage_order: bool = False) -> Registry:
    docs = [make_doc("read_file"), make_doc("secret_tool", "admin", full="## secret_tool\nTOP SECRET")]
    docs += [
        make_doc(f"tool_{i:02d}", "mcp", brief=f"Tool number {i} does one thing well. Use it for task {i}.")
        for i in range(30)
    ]
    modes = [
        make_mode(
            "big",
            groups=["read", "mcp"],
            permanent=["read_file"],
            tiers=TierConfig(share=share, context_tokens=context),
        ),
        make_mode("plain", groups=["read", "mcp"], permanent=["read_file"]),
    ]
    return Registry.from_docs(docs, modes)


def composed(reg: Registry, **kw: object) -> Composer:
    return Composer(reg, **kw)  # type: ignore[arg-type]


def test_tiers_auto_reads_as_the_defaults_and_bad_values_are_refused(tmp_path: Path) -> None:
    config = ModeConfig(**{**make_mode("m").model_dump(), "tiers": "auto"})
    assert config.tiers == TierConfig(share=0.10, context_tokens=200_000)
    with pytest.raises(ValueError, match="tiers is 'auto'"):
        ModeConfig(**{**make_mode("m").model_dump(), "tiers": "yes"})
    with pytest.raises(ValueError, match="give tiers or discovery, not both"):
        ModeConfig(**{**make_mode("m").model_dump(), "discovery": True, "tiers": "auto"})
    folder = tmp_path / "docs"
    (folder / "modes").mkdir(parents=True)
    for doc in (make_doc("read_file"),):
        (folder / "read_file.yaml").write_text(json.dumps(doc.model_dump(exclude_defaults=True)), encoding="utf-8")
    (folder / "modes" / "m.yaml").write_text(
        "slug: m\nname: M\nrole: r\ngroups: [read]\nrecent_size: 1\nbudget_tokens: 9000\ntiers: {share: 2}\n",
        encoding="utf-8",
    )
    with pytest.raises(LoadError) as caught:
        load_registry(folder)
    assert "m.yaml:7" in str(caught.value) and "tiers.share" in str(caught.value)


def test_every_tool_stays_brief_while_the_briefs_fit() -> None:
    tiers = Composer(registry(share=1.0)).tiers("big")
    assert tiers is not None
    assert (len(tiers.brief), tiers.catalog, tiers.names) == (30, (), ())


def test_past_the_share_the_least_used_become_lines_then_names() -> None:
    reg = registry(share=0.005, context=200_000)  # 1,000 tokens: the briefs do not fit, the lines do
    tiers = Composer(reg).tiers("big")
    assert tiers is not None and tiers.catalog and not tiers.names
    assert tiers.fixed + sum(Composer(reg).definitions.get(n, full=False)[1] for n in tiers.brief) <= tiers.budget
    # Without usage the mode's order decides: the earlier tools stay brief.
    assert tiers.brief == tuple(f"tool_{i:02d}" for i in range(len(tiers.brief)))
    # With usage, the most used stay brief whatever their place.
    used = Composer(reg, usage={"tool_29": 50, "tool_28": 40}).tiers("big")
    assert used is not None and {"tool_29", "tool_28"} <= set(used.brief)
    tight = Composer(registry(share=0.002, context=200_000)).tiers("big")  # 400 tokens: not even the lines fit
    assert tight is not None and tight.names and not tight.brief
    assert set(tight.catalog) | set(tight.names) == {f"tool_{i:02d}" for i in range(30)}


def test_a_catalog_line_is_a_short_summary() -> None:
    doc = make_doc("x", brief=" ".join(["word"] * 30) + ". Second sentence.")
    assert summary(doc).endswith("…") and len(summary(doc).split()) == SUMMARY_WORDS
    assert summary(make_doc("y", brief="Short one. Another.")) == "Short one."


def test_loading_appends_and_the_prefix_stays_byte_identical() -> None:
    composer = Composer(registry(share=0.005))
    tiers = composer.tiers("big")
    assert tiers is not None
    before = composer.compose("big")
    target = tiers.catalog[-1]
    after = composer.compose("big", loaded=[target])
    assert target not in [t["name"] for t in before.tools]
    assert [t["name"] for t in after.tools][-1] == target and after.loaded == (target,)
    assert list(after.tools[: len(before.tools)]) == list(before.tools)  # the prefix is unchanged
    assert after.system == before.system
    assert "FULL TEXT OF TOOL" in after.tools[-1]["description"]  # loaded in full
    # Loading a second tool appends again; a brief tool or one outside the mode is not appended.
    more = composer.compose("big", loaded=[target, tiers.catalog[0], tiers.brief[0], "secret_tool"])
    assert more.loaded == (target, tiers.catalog[0])
    assert list(more.tools[: len(after.tools)]) == list(after.tools)


def test_no_tier_shows_a_tool_outside_the_mode() -> None:
    for share in (1.0, 0.005, 0.002):
        composer = Composer(registry(share=share))
        prompt = composer.compose("big", loaded=["secret_tool", "tool_00"])
        text = prompt.system + json.dumps(prompt.tools)
        assert "secret_tool" not in text and "TOP SECRET" not in text
        tiers = composer.tiers("big")
        assert tiers is not None and "secret_tool" not in tiers.brief + tiers.catalog + tiers.names


def test_the_catalog_section_lists_lines_and_names_grouped() -> None:
    prompt = Composer(registry(share=0.005)).compose("big")
    assert "MORE TOOLS (LOAD ONE BEFORE CALLING IT)" in prompt.system and "\nmcp:\n" in prompt.system
    assert f"- {prompt.catalog[0]}: Tool number" in prompt.system
    assert "tool_search" in [t["name"] for t in prompt.tools]
    names_only = Composer(registry(share=0.002)).compose("big")
    assert "mcp: tool_" in names_only.system


def test_audit_reports_each_tools_tier_and_the_worst_case() -> None:
    report = run_audit(Composer(registry(share=0.005)))
    big = next(m for m in report.modes if m.mode == "big")
    tiers = dict(big.tiers)
    assert tiers["read_file"] == "full" and "catalog" in tiers.values() and "brief" in tiers.values()
    assert big.worst_tokens > big.composed_tokens
    assert big.as_dict()["tiers"] == tiers
    assert "Tiers of mode big" in report.to_table()
    plain = next(m for m in report.modes if m.mode == "plain")
    assert plain.tiers == () and plain.as_dict()["tiers"] is None
