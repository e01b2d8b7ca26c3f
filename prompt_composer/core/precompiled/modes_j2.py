from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'modes.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_other_modes = resolve('other_modes')
    pass
    if (undefined(name='other_modes') if l_0_other_modes is missing else l_0_other_modes):
        pass
        yield '====\nMODES\n\n'
        for l_1_other in (undefined(name='other_modes') if l_0_other_modes is missing else l_0_other_modes):
            _loop_vars = {}
            pass
            yield '- '
            yield str(environment.getattr(l_1_other, 'slug'))
            yield ' ('
            yield str(environment.getattr(l_1_other, 'name'))
            yield ')'
            if environment.getattr(l_1_other, 'when_to_use'):
                pass
                yield ': '
                yield str(environment.getattr(l_1_other, 'when_to_use'))
            yield '\n'
        l_1_other = missing

blocks = {}
debug_info = '1=12&5=15&6=19'