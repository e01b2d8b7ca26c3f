from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'recent.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_recent_docs = resolve('recent_docs')
    l_0_discovery = resolve('discovery')
    pass
    if (undefined(name='recent_docs') if l_0_recent_docs is missing else l_0_recent_docs):
        pass
        yield '====\n'
        if (undefined(name='discovery') if l_0_discovery is missing else l_0_discovery):
            pass
            yield 'DISCOVERED TOOLS\n\nFull documentation of the tools tool_search found in this task.'
        else:
            pass
            yield 'RECENTLY USED TOOLS\n\nFull documentation of the tools used most recently in this task.'
        yield '\n'
        for l_1_doc in (undefined(name='recent_docs') if l_0_recent_docs is missing else l_0_recent_docs):
            _loop_vars = {}
            pass
            yield '\n'
            yield str(environment.getattr(l_1_doc, 'full'))
            yield '\n\nInput schema: '
            yield str(environment.getattr(l_1_doc, 'schema_json'))
            yield '\n'
        l_1_doc = missing

blocks = {}
debug_info = '1=13&3=16&12=23&13=27&15=29'