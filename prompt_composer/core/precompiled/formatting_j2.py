from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'formatting.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    pass
    yield '====\nMARKDOWN RULES\n\nFormat every answer in Markdown. Refer to a file as a path in backticks, with a line number where it helps\n(`src/app.py:42`).'

blocks = {}
debug_info = ''