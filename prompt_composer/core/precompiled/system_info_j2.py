from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'system_info.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_system_info = resolve('system_info')
    pass
    if (undefined(name='system_info') if l_0_system_info is missing else l_0_system_info):
        pass
        yield '====\nSYSTEM INFORMATION\n\n'
        for (l_1_key, l_1_value) in context.call(environment.getattr((undefined(name='system_info') if l_0_system_info is missing else l_0_system_info), 'items')):
            _loop_vars = {}
            pass
            yield str(l_1_key)
            yield ': '
            yield str(l_1_value)
            yield '\n'
        l_1_key = l_1_value = missing

blocks = {}
debug_info = '2=12&6=15&7=18'