"""Provider cost models for the cost replay: how a provider writes, finds and bills a request's input against its
prompt cache (:class:`CostModel`), with Anthropic's and OpenAI's documented rules.

Costs are in base input-token units (1 = one input token at the base input price; without a cache every input
token costs 1). Output tokens are not priced. The replay (:mod:`.replay`) chooses a model through
``ReplayParams.cost_model``:

- :data:`ANTHROPIC` (default; :func:`anthropic_cost_model`): explicit ``cache_control`` breakpoints, placed as
  the middleware places them: on the newest message's last block always, and on the last tool and the stable
  system block when they cannot change within the task (``static``, ``task_start``, ``inline``; ``every_turn``
  only when the mode's ``recent_size`` is 0). Only the prefix ending at a breakpoint is written, and only from
  the minimum cacheable length (1,024 tokens by default: Sonnet 4.x, Opus 4 and 4.1; some models need 2,048 or
  4,096: set ``min_cached_tokens``). A breakpoint finds an earlier entry at its own position or at most 20 blocks
  before it (the lookback window): an entry further back is missed even though it is cached. The prefix read is
  billed at 0.1×, the rest up to the last breakpoint written at 1.25×, anything not written at 1×.
- :data:`OPENAI` (:func:`openai_cost_model`): an automatic prefix cache, no breakpoints and no write premium
  (uncached input at 1×): every prefix from 1,024 tokens is written, and the longest one is found however far
  back it is. A hit is counted in 128-token steps (rounded down) and billed at the cached-input price (0.1× by
  default). Real OpenAI hits are token-exact; counting whole blocks understates them slightly (the common start
  of a changed block is not counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class CostModel:
    """How a provider writes, finds and bills one request's input against its prompt cache, in base input-token
    units (a token not written to the cache and not read from it costs 1).

    Two kinds of cache: automatic (every prefix of a request is written, the longest written one is found) and
    explicit breakpoints (only the prefix ending at a ``cache_control`` breakpoint is written, and a breakpoint
    looks for an earlier entry at most ``lookback_blocks`` blocks back).
    """

    name: str
    read_multiplier: float  # a cached input token (a cache hit), against the base input price
    write_multiplier: float  # an input token written to the cache (not served from it)
    min_cached_tokens: int = 0  # a prefix shorter than this is never cached: no entry, so no hit
    cache_increment: int = 1  # cached tokens are counted in steps of this (rounded down)
    explicit_breakpoints: bool = False  # only breakpoint prefixes are written; False: every prefix (automatic)
    lookback_blocks: int | None = None  # a breakpoint checks itself and at most this many blocks before it

    def __post_init__(self) -> None:
        if self.read_multiplier < 0 or self.write_multiplier < 0:
            raise ValueError(f"cost model {self.name!r}: multipliers must not be negative")
        if self.min_cached_tokens < 0 or self.cache_increment < 1:
            raise ValueError(f"cost model {self.name!r}: min_cached_tokens >= 0 and cache_increment >= 1 required")
        if self.lookback_blocks is not None and self.lookback_blocks < 0:
            raise ValueError(f"cost model {self.name!r}: lookback_blocks must not be negative")

    def cached_tokens(self, shared: int) -> int:
        """The tokens billed as cached when a request shares ``shared`` prefix tokens with an earlier one."""
        cached = shared - shared % self.cache_increment
        return cached if cached >= self.min_cached_tokens else 0

    def price(self, tokens: int, shared: int, written: int | None = None) -> float:
        """The cost of a ``tokens``-token request that reads a ``shared``-token prefix from the cache and writes
        it up to ``written`` tokens (default: the whole request); tokens after that are billed at the base price.
        """
        cached = self.cached_tokens(shared)
        end = tokens if written is None else max(cached, min(written, tokens))
        return cached * self.read_multiplier + (end - cached) * self.write_multiplier + (tokens - end)

    def with_min_cached_tokens(self, tokens: int) -> CostModel:
        """The same cache for a model with another minimum cacheable prompt length."""
        return replace(self, min_cached_tokens=tokens)

    def describe(self) -> str:
        text = f"{self.name} (cache reads {self.read_multiplier:g}×, writes {self.write_multiplier:g}× the input price"
        if self.min_cached_tokens or self.cache_increment > 1:
            text += f"; hits from {self.min_cached_tokens:,} tokens"
            if self.cache_increment > 1:
                text += f", in steps of {self.cache_increment:,}"
        if self.explicit_breakpoints and self.lookback_blocks is not None:
            text += f"; a breakpoint looks back at most {self.lookback_blocks} blocks"
        return text + ")"


# Anthropic (prompt caching, pricing): a 5-minute cache write costs 1.25× the base input price, a cache read
# 0.1×. Entries are written only at cache_control breakpoints; "the system automatically checks for cache hits
# at all previous content block boundaries", up to about 20 blocks before the breakpoint, so a prefix that
# ends further back misses. The minimum cacheable prompt length is 1,024 tokens for Sonnet 4.x, Opus 4 and 4.1
# (a shorter prefix "cannot be cached, even if marked with cache_control"); 2,048 for Haiku 3 and 3.5 and 4,096
# for Opus 4.5 and 4.6 and Haiku 4.5: pass ``min_cached_tokens`` for those.
ANTHROPIC_CACHE_WRITE_MULTIPLIER = 1.25
ANTHROPIC_CACHE_READ_MULTIPLIER = 0.1
ANTHROPIC_MIN_CACHED_TOKENS = 1024
ANTHROPIC_LOOKBACK_BLOCKS = 20


def anthropic_cost_model(min_cached_tokens: int = ANTHROPIC_MIN_CACHED_TOKENS) -> CostModel:
    """Anthropic's breakpoint cache; ``min_cached_tokens`` is the model's minimum cacheable prompt length."""
    return CostModel(
        "anthropic",
        read_multiplier=ANTHROPIC_CACHE_READ_MULTIPLIER,
        write_multiplier=ANTHROPIC_CACHE_WRITE_MULTIPLIER,
        min_cached_tokens=min_cached_tokens,
        explicit_breakpoints=True,
        lookback_blocks=ANTHROPIC_LOOKBACK_BLOCKS,
    )


ANTHROPIC = anthropic_cost_model()

# OpenAI (prompt caching guide): caching is automatic and free for prompts of 1,024 tokens or more; "cache hits
# are only possible for exact prefix matches", in increments of 128 tokens. Cached input is billed at the
# model's "cached input" price: 0.1× the input price for the GPT-5 family (e.g. gpt-5.1 $1.25 → $0.125 per
# million), 0.25× for gpt-4.1 and o3, 0.5× for gpt-4o and gpt-4o-mini. Default: 0.1× (the current models).
OPENAI_CACHED_INPUT_MULTIPLIER = 0.1
OPENAI_MIN_CACHED_TOKENS = 1024
OPENAI_CACHE_INCREMENT = 128


def openai_cost_model(
    cached_input_multiplier: float = OPENAI_CACHED_INPUT_MULTIPLIER, min_cached_tokens: int = OPENAI_MIN_CACHED_TOKENS
) -> CostModel:
    """OpenAI's automatic prefix cache; ``cached_input_multiplier`` is the model's cached/uncached input price."""
    return CostModel(
        "openai",
        read_multiplier=cached_input_multiplier,
        write_multiplier=1.0,
        min_cached_tokens=min_cached_tokens,
        cache_increment=OPENAI_CACHE_INCREMENT,
    )


OPENAI = openai_cost_model()
COST_MODELS: Mapping[str, CostModel] = {"anthropic": ANTHROPIC, "openai": OPENAI}
