from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'guidelines.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_tool_groups = resolve('tool_groups')
    l_0_items = missing
    pass
    l_0_items = ['Decide what you already know and what you still need, then pick the tool that gets it most directly.']
    context.vars['items'] = l_0_items
    context.exported_vars.add('items')
    if ('command' in (undefined(name='tool_groups') if l_0_tool_groups is missing else l_0_tool_groups)):
        pass
        l_0_items = ((undefined(name='items') if l_0_items is missing else l_0_items) + ['Prefer the dedicated tool over a shell command when one exists (reading, searching and listing files).'])
        context.vars['items'] = l_0_items
        context.exported_vars.add('items')
    l_0_items = ((undefined(name='items') if l_0_items is missing else l_0_items) + ['Calls that do not depend on each other (reading several related files, say) may go in one message; they run in the order you write them.', 'Never assume a tool call succeeded: read its result before the next step, and adapt when it failed.'])
    context.vars['items'] = l_0_items
    context.exported_vars.add('items')
    yield '====\nTOOL USE GUIDELINES\n\n'
    l_1_loop = missing
    for l_1_item, l_1_loop in LoopContext((undefined(name='items') if l_0_items is missing else l_0_items), undefined):
        _loop_vars = {}
        pass
        yield str(environment.getattr(l_1_loop, 'index'))
        yield '. '
        yield str(l_1_item)
        yield '\n'
    l_1_loop = l_1_item = missing

blocks = {}
debug_info = '1=13&2=16&3=18&5=21&12=26&13=29'