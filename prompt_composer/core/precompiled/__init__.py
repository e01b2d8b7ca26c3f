"""The shipped section templates compiled by Jinja (see prompt_composer.core.templating). Generated: do not
edit. After changing a template, write them again: UPDATE_PRECOMPILED=1 pytest tests/core/test_templating.py
"""

JINJA2 = "3.1.6"
OPTIONS = "('{%', '%}', '{{', '}}', '{#', '#}', None, None, False, False, '\\n', False, False, True, [])"
# template name: (SHA-1 of its source, Jinja's checksum; the module holding its code)
TEMPLATES: dict[str, tuple[str, str]] = {
    "capabilities.j2": ("40a2a6936b592c4a1b850e1af689ca50210b2fee", "capabilities_j2"),
    "catalog.j2": ("c013a58c9b233c8e7e5ced4d5381299d215314f1", "catalog_j2"),
    "custom_instructions.j2": ("28fb88de01e8f85b2f8b77a3b345e3acfb7ef4e1", "custom_instructions_j2"),
    "formatting.j2": ("a389844f17b7f71bed29190effb0c85d80160ede", "formatting_j2"),
    "guidelines.j2": ("842db623a9d718a0e8a2c280e05230f37a1c7ec8", "guidelines_j2"),
    "mcp.j2": ("9b5aca529c95d6bf0a2c44cedf5a9b073f79a595", "mcp_j2"),
    "modes.j2": ("8f488436b17334003a5e0fb7b4859172e854b162", "modes_j2"),
    "objective.j2": ("52019f52aea9eb6bfc291c896daedbc81e9dbe14", "objective_j2"),
    "recent.j2": ("9ff1ce39099e241e1c6e59beb788499dbe8dbea7", "recent_j2"),
    "role.j2": ("218a3edf97766f3e43982291627a6bb18d353714", "role_j2"),
    "rules.j2": ("71085ce70cd030bffdbb480dafb8512a354a3896", "rules_j2"),
    "system_info.j2": ("3f068584eeaea9803f8df72d4a028f97eb090a60", "system_info_j2"),
    "tool_use.j2": ("15f9ecf6538c6a053d69a733b503cc2c97a725a2", "tool_use_j2"),
}
