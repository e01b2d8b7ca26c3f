from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'custom_instructions.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_mode = resolve('mode')
    l_0_custom_instructions = resolve('custom_instructions')
    pass
    if environment.getattr((undefined(name='mode') if l_0_mode is missing else l_0_mode), 'custom_instructions'):
        pass
        yield '====\nMODE INSTRUCTIONS\n\n'
        yield str(environment.getattr((undefined(name='mode') if l_0_mode is missing else l_0_mode), 'custom_instructions'))
    if (environment.getattr((undefined(name='mode') if l_0_mode is missing else l_0_mode), 'custom_instructions') and (undefined(name='custom_instructions') if l_0_custom_instructions is missing else l_0_custom_instructions)):
        pass
        yield '\n\n'
    if (undefined(name='custom_instructions') if l_0_custom_instructions is missing else l_0_custom_instructions):
        pass
        yield "====\nUSER'S CUSTOM INSTRUCTIONS\n\n"
        yield str((undefined(name='custom_instructions') if l_0_custom_instructions is missing else l_0_custom_instructions))

blocks = {}
debug_info = '1=13&5=16&7=17&10=20&14=23'