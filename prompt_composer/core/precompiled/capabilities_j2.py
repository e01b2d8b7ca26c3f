from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'capabilities.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_capabilities = resolve('capabilities')
    pass
    if (undefined(name='capabilities') if l_0_capabilities is missing else l_0_capabilities):
        pass
        yield '====\nCAPABILITIES\n\n'
        yield str((undefined(name='capabilities') if l_0_capabilities is missing else l_0_capabilities))

blocks = {}
debug_info = '1=12&5=15'