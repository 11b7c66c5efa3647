"""Write a toolhost tool plugin in Python, built with componentize-py.

A plugin is a call to `plugin(...)` and one decorated function per tool;
the parameters come from the function's signature:

    from typing import Annotated
    from toolhost import WitWorld, plugin, tool

    plugin("wordcount", "0.1.0", "Count words in text")

    @tool(agent_callable=True, example={"text": "one two three"})
    def count(text: Annotated[str, "the text to count"]) -> dict:
        '''Count the words in a text.'''
        return {"words": len(text.split())}

Build it with `componentize-py -d wit -w plugin componentize app -o wordcount.wasm`
(`toolhost wit --out wit` writes the WIT). componentize-py looks for the
exports in a class named `WitWorld` in the app module, hence the import.

Types: `str` is a string, `int` an integer, `float` a number, `bool` a
boolean, anything else (`dict`, `list`, unannotated) any JSON value.
`Annotated[T, "text"]` gives the parameter its description; a default value
or `Optional[T]` makes it optional. A tool returns `str` (text) or anything
`json.dumps` takes (JSON), and raises `InvalidArgs` or `Failed` to fail;
any other exception fails the call with its type and message. Every call
runs in a fresh instance, so module state does not survive between calls.
"""

import inspect
import json
import typing

from componentize_py_types import Err
from wit_world import WitWorld as _Exports
from wit_world.imports import types as wit

__all__ = ["Failed", "InvalidArgs", "WitWorld", "plugin", "tool"]

# The toolhost plugin API these helpers are written against.
API_VERSION = "0.1.0"

_PERMISSIONS = {
    "public": wit.Permission.PUBLIC,
    "moderate": wit.Permission.MODERATE,
    "sensitive": wit.Permission.SENSITIVE,
}
_ACCESS = {"read": wit.DirAccess.READ, "read-write": wit.DirAccess.READ_WRITE}
# Checked in order: bool before int, since a bool is an int in Python.
_TYPES = [
    (bool, wit.ParamType.BOOLEAN, lambda v: isinstance(v, bool)),
    (int, wit.ParamType.INTEGER, lambda v: isinstance(v, int) and not isinstance(v, bool)),
    (float, wit.ParamType.NUMBER, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    (str, wit.ParamType.STRING, lambda v: isinstance(v, str)),
]
_TYPE_NAMES = {
    wit.ParamType.BOOLEAN: "a boolean",
    wit.ParamType.INTEGER: "an integer",
    wit.ParamType.NUMBER: "a number",
    wit.ParamType.STRING: "a string",
    wit.ParamType.JSON: "JSON",
}


class InvalidArgs(Exception):
    """The arguments were wrong; the message tells the model what to send."""


class Failed(Exception):
    """The tool ran and failed; the message goes back to the model."""


_plugin = {}
_tools = {}


def plugin(name, version, description, *, directories=None, env=(), http_hosts=()):
    """Declare the plugin. `directories` maps a guest path to "read" or
    "read-write"; `env` and `http_hosts` list what it asks for."""
    _plugin.update(
        name=name,
        version=version,
        description=description,
        capabilities=wit.Capabilities(
            directories=[wit.DirRequest(guest_path=p, access=_ACCESS[a]) for p, a in (directories or {}).items()],
            env=list(env),
            http_hosts=list(http_hosts),
        ),
    )


def tool(func=None, *, name=None, description=None, permission="public", agent_callable=False,
         result_approval=False, distributed_exposed=False, tags=(), example=None):
    """Declare a tool: `@tool` or `@tool(...)`. Its name is the function's
    and its description the docstring, unless given."""

    def register(func):
        hints = typing.get_type_hints(func, include_extras=True)
        params = [_param(p, hints.get(p.name)) for p in inspect.signature(func).parameters.values()]
        declared = wit.Tool(
            name=name or func.__name__,
            description=description or inspect.cleandoc(func.__doc__ or ""),
            params=[p for p, _ in params],
            permission=_PERMISSIONS[permission],
            result_approval=result_approval,
            agent_callable=agent_callable,
            distributed_exposed=distributed_exposed,
            tags=list(tags),
            example=None if example is None else json.dumps(example),
        )
        _tools[declared.name] = (declared, func, [check for _, check in params])
        return func

    return register(func) if func is not None else register


def _param(parameter, hint):
    """The declared parameter and the check its argument passes."""
    description = ""
    if typing.get_origin(hint) is typing.Annotated:
        hint, *extras = typing.get_args(hint)
        description = next((e for e in extras if isinstance(e, str)), "")
    required = parameter.default is inspect.Parameter.empty
    args = typing.get_args(hint)
    if type(None) in args:  # Optional[T], T | None
        required = False
        rest = [a for a in args if a is not type(None)]
        hint = rest[0] if len(rest) == 1 else None
    ty, accepts = next(((ty, accepts) for py, ty, accepts in _TYPES if hint is py), (wit.ParamType.JSON, None))
    declared = wit.Param(name=parameter.name, type=ty, description=description, required=required)
    return declared, (parameter.name, ty, accepts, required)


def _call(name, args_json):
    if name not in _tools:
        raise Err(wit.ToolError_UnknownTool(f"no tool named {name!r}"))
    _, func, checks = _tools[name]
    try:
        args = json.loads(args_json)
    except ValueError as e:
        raise Err(wit.ToolError_InvalidArgs(f"the arguments are not JSON: {e}"))
    if not isinstance(args, dict):
        raise Err(wit.ToolError_InvalidArgs("the arguments must be a JSON object"))
    kwargs = {}
    for key, ty, accepts, required in checks:
        if key not in args or args[key] is None:
            if required:
                raise Err(wit.ToolError_InvalidArgs(f"missing required argument `{key}`"))
            continue
        if accepts is not None and not accepts(args[key]):
            raise Err(wit.ToolError_InvalidArgs(f"argument `{key}` must be {_TYPE_NAMES[ty]}"))
        kwargs[key] = args[key]
    try:
        result = func(**kwargs)
    except InvalidArgs as e:
        raise Err(wit.ToolError_InvalidArgs(str(e)))
    except Failed as e:
        raise Err(wit.ToolError_Failed(str(e)))
    except Exception as e:  # a bug in the tool: tell the model what broke
        raise Err(wit.ToolError_Failed(f"{type(e).__name__}: {e}"))
    if isinstance(result, str):
        return wit.Output_Text(result)
    return wit.Output_Json(json.dumps(result))


class WitWorld(_Exports):
    """The component's exports, as componentize-py expects them."""

    def manifest(self):
        return wit.Manifest(
            api_version=API_VERSION,
            tools=[declared for declared, _, _ in _tools.values()],
            **_plugin,
        )

    def invoke(self, tool, args_json):
        return _call(tool, args_json)
