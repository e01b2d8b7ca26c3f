from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'mcp.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_mcp_servers = resolve('mcp_servers')
    l_0_allowed_tools = resolve('allowed_tools')
    try:
        t_1 = environment.filters['default']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'default' found.")
    try:
        t_2 = environment.filters['tojson']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'tojson' found.")
    try:
        t_3 = environment.tests['defined']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No test named 'defined' found.")
    pass
    if ((undefined(name='mcp_servers') if l_0_mcp_servers is missing else l_0_mcp_servers) and ('use_mcp_tool' in (undefined(name='allowed_tools') if l_0_allowed_tools is missing else l_0_allowed_tools))):
        pass
        yield '====\nMCP SERVERS\n\nCall these tools with use_mcp_tool, naming the server and the tool exactly as written here.\n\n'
        for l_1_server in (undefined(name='mcp_servers') if l_0_mcp_servers is missing else l_0_mcp_servers):
            _loop_vars = {}
            pass
            yield '- '
            yield str(environment.getattr(l_1_server, 'name'))
            if (t_3(environment.getattr(l_1_server, 'description')) and environment.getattr(l_1_server, 'description')):
                pass
                yield ': '
                yield str(environment.getattr(l_1_server, 'description'))
            yield '\n'
            for l_2_tool in t_1(environment.getattr(l_1_server, 'tools'), []):
                _loop_vars = {}
                pass
                yield '  - `'
                yield str(environment.getattr(l_2_tool, 'name'))
                yield '`'
                if (t_3(environment.getattr(l_2_tool, 'description')) and environment.getattr(l_2_tool, 'description')):
                    pass
                    yield ': '
                    yield str(environment.getattr(l_2_tool, 'description'))
                if (t_3(environment.getattr(l_2_tool, 'input_schema')) and environment.getattr(l_2_tool, 'input_schema')):
                    pass
                    yield ' Input schema: `'
                    yield str(t_2(context.eval_ctx, environment.getattr(l_2_tool, 'input_schema')))
                    yield '`'
                yield '\n'
            l_2_tool = missing
        l_1_server = missing

blocks = {}
debug_info = '1=31&7=34&8=38&9=44&10=48&11=50&12=54'