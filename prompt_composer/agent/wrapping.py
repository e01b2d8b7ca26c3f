"""The generic ``wrap()``: picks the provider adapter by the SDK client's type, importing that SDK only then."""

from __future__ import annotations

from typing import Any, Unpack

from .state import WrapOptions


def wrap(client: Any, **options: Unpack[WrapOptions]) -> Any:
    """Wrap an SDK client for one task and mode, whichever provider it is: ``anthropic.Anthropic`` /
    ``AsyncAnthropic`` (see :func:`prompt_composer.agent.anthropic.wrap`) or ``openai.OpenAI`` / ``AsyncOpenAI``
    (see :func:`prompt_composer.agent.openai.wrap`; ``api="responses"`` runs its loop over the Responses API); the
    options are :class:`~prompt_composer.agent.state.WrapOptions`."""
    packages = {cls.__module__.partition(".")[0] for cls in type(client).__mro__}
    if "anthropic" in packages:
        from . import anthropic

        return anthropic.wrap(client, **options)
    if "openai" in packages:
        from . import openai

        return openai.wrap(client, **options)
    raise TypeError(
        f"wrap() takes an anthropic.Anthropic / AsyncAnthropic or openai.OpenAI / AsyncOpenAI client, "
        f"not {type(client).__name__}"
    )
