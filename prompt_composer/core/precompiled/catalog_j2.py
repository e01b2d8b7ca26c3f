from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'catalog.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_style = resolve('style')
    l_0_full_docs = resolve('full_docs')
    l_0_brief_docs = resolve('brief_docs')
    l_0_tiered = resolve('tiered')
    l_0_unlisted_total = resolve('unlisted_total')
    l_0_catalog_groups = resolve('catalog_groups')
    l_0_name_groups = resolve('name_groups')
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    pass
    if ((undefined(name='style') if l_0_style is missing else l_0_style) == 'text'):
        pass
        yield '# Tools\n'
        for l_1_doc in (undefined(name='full_docs') if l_0_full_docs is missing else l_0_full_docs):
            _loop_vars = {}
            pass
            yield '\n'
            yield str(environment.getattr(l_1_doc, 'full'))
            yield '\n\nInput schema: '
            yield str(environment.getattr(l_1_doc, 'schema_json'))
            yield '\n'
        l_1_doc = missing
        if (undefined(name='brief_docs') if l_0_brief_docs is missing else l_0_brief_docs):
            pass
            yield '\n## Briefly described tools\n'
            for l_1_doc in (undefined(name='brief_docs') if l_0_brief_docs is missing else l_0_brief_docs):
                _loop_vars = {}
                pass
                yield '\n### '
                yield str(environment.getattr(l_1_doc, 'name'))
                yield '\n'
                yield str(environment.getattr(l_1_doc, 'brief'))
                if environment.getattr(l_1_doc, 'signature'):
                    pass
                    yield '\nParameters: '
                    yield str(environment.getattr(l_1_doc, 'signature'))
                yield '\n'
            l_1_doc = missing
    if ((undefined(name='tiered') if l_0_tiered is missing else l_0_tiered) and (undefined(name='unlisted_total') if l_0_unlisted_total is missing else l_0_unlisted_total)):
        pass
        yield '\n'
        if ((undefined(name='style') if l_0_style is missing else l_0_style) == 'text'):
            pass
            yield '\n\n'
        yield '====\nMORE TOOLS (LOAD ONE BEFORE CALLING IT)\n'
        for (l_1_group, l_1_items) in (undefined(name='catalog_groups') if l_0_catalog_groups is missing else l_0_catalog_groups):
            _loop_vars = {}
            pass
            yield '\n'
            yield str(l_1_group)
            yield ':\n'
            for (l_2_name, l_2_line) in l_1_items:
                _loop_vars = {}
                pass
                yield '- '
                yield str(l_2_name)
                yield ': '
                yield str(l_2_line)
                yield '\n'
            l_2_name = l_2_line = missing
        l_1_group = l_1_items = missing
        for (l_1_group, l_1_names) in (undefined(name='name_groups') if l_0_name_groups is missing else l_0_name_groups):
            _loop_vars = {}
            pass
            yield '\n'
            yield str(l_1_group)
            yield ': '
            yield str(t_1(context.eval_ctx, l_1_names, ', '))
        l_1_group = l_1_names = missing

blocks = {}
debug_info = '1=24&3=27&4=31&6=33&8=36&10=39&11=43&12=45&13=46&14=49&19=52&20=55&25=59&26=63&27=65&28=69&31=75&32=79'