from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'rules.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_mode = resolve('mode')
    l_0_tool_groups = resolve('tool_groups')
    pass
    yield '====\nRULES\n\n- Work inside the workspace; do not touch files outside it.'
    def t_1(fiter):
        for (l_1_group, l_1_restriction) in fiter:
            if (l_1_group in (undefined(name='tool_groups') if l_0_tool_groups is missing else l_0_tool_groups)):
                yield (l_1_group, l_1_restriction)
    for (l_1_group, l_1_restriction) in t_1(context.call(environment.getattr(environment.getattr((undefined(name='mode') if l_0_mode is missing else l_0_mode), 'file_restrictions'), 'items'))):
        l_1_what = missing
        _loop_vars = {}
        pass
        l_1_what = (str_join((' (', environment.getattr(l_1_restriction, 'description'), ')', )) if environment.getattr(l_1_restriction, 'description') else '')
        _loop_vars['what'] = l_1_what
        if (l_1_group == 'edit'):
            pass
            yield '\n- In this mode you may create and edit only files matching `'
            yield str(environment.getattr(l_1_restriction, 'file_regex'))
            yield '`'
            yield str((undefined(name='what') if l_1_what is missing else l_1_what))
            yield '; an edit to any other file is refused.'
        else:
            pass
            yield '\n- In this mode the '
            yield str(l_1_group)
            yield ' tools may use only files matching `'
            yield str(environment.getattr(l_1_restriction, 'file_regex'))
            yield '`'
            yield str((undefined(name='what') if l_1_what is missing else l_1_what))
            yield '; a call naming any other file is refused.'
    l_1_group = l_1_restriction = l_1_what = missing
    if (('edit' in (undefined(name='tool_groups') if l_0_tool_groups is missing else l_0_tool_groups)) and ('edit' not in environment.getattr((undefined(name='mode') if l_0_mode is missing else l_0_mode), 'file_restrictions'))):
        pass
        yield '\n- Make the smallest change that solves the task, and keep the existing style of the code.'
    yield '\n- Ask a question only when you cannot find the answer with your tools.'

blocks = {}
debug_info = '5=14&6=22&7=24&8=27&10=34&13=41'