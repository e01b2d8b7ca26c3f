from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'tool_use.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_style = resolve('style')
    l_0_expandable = resolve('expandable')
    l_0_fetch_available = resolve('fetch_available')
    l_0_tiered = resolve('tiered')
    l_0_unlisted_total = resolve('unlisted_total')
    l_0_discovery = resolve('discovery')
    l_0_discovery_total = resolve('discovery_total')
    pass
    yield '====\nTOOL USE\n\n'
    if ((undefined(name='style') if l_0_style is missing else l_0_style) == 'text'):
        pass
        yield 'You have tools, documented below. To call one, write a fenced block:\n\n```tool_call\n{"name": "<tool name>", "input": {<parameters as JSON>}}\n```\n\nEach block is one call; a message may hold several blocks, and they run in order. Stop after your last block\nand never write a result yourself: the results come back in the next message, one per call in the same order,\neach starting with a line `tool_result name=<tool name> ok` (or `error`), followed by the tool\'s output.'
    else:
        pass
        yield 'You have tools, defined in this request. Call one when it moves the task forward, and wait for its result\nbefore relying on it.'
    if ((undefined(name='expandable') if l_0_expandable is missing else l_0_expandable) and (undefined(name='fetch_available') if l_0_fetch_available is missing else l_0_fetch_available)):
        pass
        yield '\n\nSome tools are described only briefly. Before the first call to such a tool, call `fetch_tool_description`\nwith its name to read its parameters, rules and examples.'
    if ((undefined(name='tiered') if l_0_tiered is missing else l_0_tiered) and (undefined(name='unlisted_total') if l_0_unlisted_total is missing else l_0_unlisted_total)):
        pass
        yield '\n\n'
        yield str((undefined(name='unlisted_total') if l_0_unlisted_total is missing else l_0_unlisted_total))
        yield ' more tools of this mode are listed below by name (some with a one-line summary) and are not\nloaded yet: you cannot call one before it is. To load one, call `tool_search` with what you want to do, or\n`fetch_tool_description` with its name; from then on it is in your tools for the rest of the task.'
    if (undefined(name='discovery') if l_0_discovery is missing else l_0_discovery):
        pass
        yield '\n\nThis mode has '
        yield str((undefined(name='discovery_total') if l_0_discovery_total is missing else l_0_discovery_total))
        yield ' tools and only some are loaded. When you need one you do not have, call\n`tool_search` with what you want to do: the tools it finds are added for the rest of the task.'

blocks = {}
debug_info = '4=19&18=25&23=28&25=31&29=33&31=36'