"""Small helpers every layer may use: YAML files with line numbers, model-written JSON, lazy package exports, text
tables.

Nothing here is public API; nothing here imports from the rest of the package except :mod:`prompt_composer.errors`.
"""
