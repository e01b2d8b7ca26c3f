"""Validated models written down as data, so that a later process rebuilds them without validating again.

Validating a file's data is a function of the data and of the model's definition (its fields, its validators,
pydantic's version). :func:`record` writes down what validation produced, as JSON's own kind of data;
:func:`rebuild` makes the same model back from it with ``model_construct`` (no validation, and no pydantic schema
built: the models are declared ``defer_build``, so a process that only rebuilds never builds one). A record is
bound to :func:`definition`, a hash of the model's definition; :mod:`.yamlcache` keeps records beside the parsed
data of files, and uses one only for the same bytes under the same definition (see its docstring for the trust
argument).

A record is made only where it rebuilds exactly: every field's type is one of the shapes below (strings, numbers,
booleans, ``None``, literals, tuples, lists, ``dict[str, ...]``, ``Any`` holding JSON's own data, nested models,
optionals of these), and the rebuilt model is checked equal to the validated one, field by field and type by
type, fields set included, before the record is returned. A model or a value outside that gets no record and is
validated every time.

:func:`dumps` is ``json.dumps`` of data holding models as ``model_dump(mode="json")`` writes them, without
pydantic's serializer (which a rebuilt model would have to build first): what the registry's fingerprint hashes.
"""

from __future__ import annotations

import json
import math
import sys
import types
import typing
import unicodedata
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union

import pydantic
import pydantic_core
from pydantic import BaseModel

from .sources import source_digest

# What validating depends on besides the models' source: pydantic's versions, and the interpreter's (its string
# methods and ``re`` follow its Unicode tables: a card's printable check or a word count may differ between them,
# and one cache folder serves every interpreter of the user).
_SALT = "\0".join(
    (
        pydantic.VERSION,
        pydantic_core.__version__,
        f"{sys.version_info[0]}.{sys.version_info[1]}",
        unicodedata.unidata_version,
    )
)

M = TypeVar("M", bound=BaseModel)

# A field's shape: ("any",), ("str",), ("int",), ("float",), ("bool",), ("none",), ("literal", values),
# ("tuple", item), ("list", item), ("dict", value), ("model", class), ("union", shapes).
Shape = tuple[Any, ...]
_LEAVES: dict[Any, Shape] = {
    Any: ("any",),
    str: ("str",),
    int: ("int",),
    float: ("float",),
    bool: ("bool",),
    type(None): ("none",),
}
_MAX_DEPTH = 200  # as deep as the YAML reader lets a file nest


class Unrecordable(ValueError):
    """A model, or a value, that has no record which rebuilds it exactly; or a record that does not fit its model."""


def _shape(annotation: Any, seen: tuple[type[BaseModel], ...]) -> Shape:
    leaf = _LEAVES.get(annotation)
    if leaf is not None:
        return leaf
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            raise Unrecordable(f"{annotation.__name__} holds itself")
        _fields(annotation, seen)  # refuses a nested model that cannot be recorded
        return ("model", annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal and all(type(value) in (str, int, bool) for value in args):
        return ("literal", frozenset(args))
    if origin in (Union, types.UnionType):
        return ("union", tuple(_shape(arg, seen) for arg in args))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return ("tuple", _shape(args[0], seen))
    if origin is list and len(args) == 1:
        return ("list", _shape(args[0], seen))
    if origin is dict and len(args) == 2 and args[0] is str:
        return ("dict", _shape(args[1], seen))
    raise Unrecordable(f"no record for a field of type {annotation!r}")


_PLANS: dict[type[BaseModel], dict[str, Shape] | Unrecordable] = {}


def _fields(model: type[BaseModel], seen: tuple[type[BaseModel], ...] = ()) -> dict[str, Shape]:
    """The shape of each field of ``model`` (computed once per class); :class:`Unrecordable` when there is none."""
    plan = _PLANS.get(model)
    if plan is None:
        try:
            if model.model_config.get("extra") == "allow" or model.__private_attributes__:
                raise Unrecordable(f"{model.__name__} holds more than its fields")
            plan = {name: _shape(field.annotation, (*seen, model)) for name, field in model.model_fields.items()}
        except Unrecordable as exc:
            plan = exc
        _PLANS[model] = plan
    if isinstance(plan, Unrecordable):
        raise plan
    return plan


def _plain(value: Any, depth: int) -> Any:
    """``value`` when it is JSON's own data that reads back equal (no NaN, string keys only), else Unrecordable."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if math.isnan(value):
            raise Unrecordable("NaN is not equal to itself")
        return value
    if depth > _MAX_DEPTH:
        raise Unrecordable("nested too deeply")
    if kind is list:
        return [_plain(item, depth + 1) for item in value]
    if kind is dict:
        if not all(type(key) is str for key in value):
            raise Unrecordable("a mapping key that is not a string")
        return {key: _plain(item, depth + 1) for key, item in value.items()}
    raise Unrecordable(f"a {kind.__name__} is not JSON data")


def _leaf_fits(tag: str, value: Any) -> bool:
    kind = type(value)
    if tag == "str":
        return kind is str
    if tag == "int":
        return kind is int
    if tag == "float":
        return kind is float or kind is int
    if tag == "bool":
        return kind is bool
    return value is None  # "none"


def _encode(shape: Shape, value: Any, depth: int) -> Any:
    tag = shape[0]
    if tag == "any":
        return _plain(value, depth)
    if tag == "literal":
        if type(value) in (str, int, bool) and value in shape[1]:
            return value
    elif tag == "model":
        if type(value) is shape[1]:
            return _record(value, depth + 1)
    elif tag == "union":
        for option in shape[1]:
            try:
                return _encode(option, value, depth)
            except Unrecordable:
                continue
    elif tag in ("tuple", "list"):
        if type(value) is (tuple if tag == "tuple" else list):
            return [_encode(shape[1], item, depth + 1) for item in value]
    elif tag == "dict":
        if type(value) is dict and all(type(key) is str for key in value):
            return {key: _encode(shape[1], item, depth + 1) for key, item in value.items()}
    elif _leaf_fits(tag, value):
        return _plain(value, depth)
    raise Unrecordable(f"a {type(value).__name__} where the model holds {tag}")


def _record(obj: BaseModel, depth: int = 0) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        raise Unrecordable("nested too deeply")
    plan = _fields(type(obj))
    values = obj.__dict__
    if values.keys() != plan.keys() or obj.__pydantic_extra__:
        raise Unrecordable(f"{type(obj).__name__} holds other keys than its fields")
    return {
        "set": sorted(obj.model_fields_set),
        "fields": {name: _encode(shape, values[name], depth) for name, shape in plan.items()},
    }


Decoder = Callable[[Any], Any]
_LEAF_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (float, int),  # JSON keeps an int an int and a float a float: whichever validation gave
    "bool": (bool,),
    "none": (type(None),),
}
_DECODERS: dict[Shape, Decoder] = {}


def _misfit(value: Any, tag: str) -> Unrecordable:
    return Unrecordable(f"a {type(value).__name__} where the model holds {tag}")


def _decoder(shape: Shape) -> Decoder:
    """What turns the JSON of a value of ``shape`` back into the value (raising :class:`Unrecordable` when it does
    not fit), made once per shape: a warm load rebuilds thousands of fields. The shapes hold no cycle (a model
    holding itself has none), so neither can a decoding, however deep the record."""
    decoder = _DECODERS.get(shape)
    if decoder is None:
        decoder = _make_decoder(shape)
        _DECODERS[shape] = decoder
    return decoder


def _make_decoder(shape: Shape) -> Decoder:
    tag = shape[0]
    if tag == "any":
        return lambda value: value  # JSON's own data: what a record of Any holds, read back by json.loads
    if tag in _LEAF_TYPES:
        kinds = _LEAF_TYPES[tag]

        def leaf(value: Any) -> Any:
            if type(value) in kinds:
                return value
            raise _misfit(value, tag)

        return leaf
    if tag == "literal":
        allowed = shape[1]

        def literal(value: Any) -> Any:
            if type(value) in (str, int, bool) and value in allowed:
                return value
            raise _misfit(value, tag)

        return literal
    if tag == "model":
        model = shape[1]
        return lambda value: _rebuild(value, model)
    if tag == "union":
        options = [_decoder(option) for option in shape[1] if option != ("none",)]
        optional = ("none",) in shape[1]

        def union(value: Any) -> Any:
            if value is None and optional:  # most optional fields are unset: no failed try for them
                return None
            for option in options:
                try:
                    return option(value)
                except Unrecordable:
                    continue
            raise _misfit(value, tag)

        return union
    item = _decoder(shape[1])
    if tag == "dict":

        def mapping(value: Any) -> Any:
            if type(value) is dict:
                return {key: item(each) for key, each in value.items()}
            raise _misfit(value, tag)

        return mapping
    container: Callable[[list[Any]], Any] = tuple if tag == "tuple" else list

    def sequence(value: Any) -> Any:
        if type(value) is list:
            return container([item(each) for each in value])
        raise _misfit(value, tag)

    return sequence


_FIELD_DECODERS: dict[type[BaseModel], tuple[tuple[str, Decoder], ...]] = {}


def _rebuild(record: Any, model: type[M]) -> M:
    decoders = _FIELD_DECODERS.get(model)
    if decoders is None:
        decoders = tuple((name, _decoder(shape)) for name, shape in _fields(model).items())
        _FIELD_DECODERS[model] = decoders
    plan = _fields(model)
    if type(record) is not dict or record.keys() != {"set", "fields"}:
        raise Unrecordable("not a record")
    fields, given = record["fields"], record["set"]
    if type(fields) is not dict or fields.keys() != plan.keys():
        raise Unrecordable(f"not the fields of {model.__name__}")
    if type(given) is not list or not all(type(name) is str and name in plan for name in given):
        raise Unrecordable("fields set that are not the model's")
    values = {name: decode(fields[name]) for name, decode in decoders}
    return model.model_construct(_fields_set=set(given), **values)


def _same(a: Any, b: Any, depth: int = 0) -> bool:
    """Equal and of the same types, fields set included, down to each field's value (``1 == 1.0 == True``); a
    mapping or list below that is compared whole (its items are JSON's own data, written and read back as they
    are: see :func:`_plain`)."""
    if type(a) is not type(b) or depth > _MAX_DEPTH:
        return False
    if isinstance(a, BaseModel):
        return (
            a.model_fields_set == b.model_fields_set
            and a.__dict__.keys() == b.__dict__.keys()
            and all(_same(a.__dict__[key], b.__dict__[key], depth + 1) for key in a.__dict__)
        )
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y, depth + 1) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def record(obj: BaseModel) -> dict[str, Any] | None:
    """The record of ``obj`` (a validated model), or ``None`` when it has none that rebuilds it exactly."""
    try:
        written = _record(obj)
        # What JSON reads back of a record is the record itself (_plain lets nothing else in), so this is the
        # model a later process rebuilds.
        rebuilt = _rebuild(written, type(obj))
    except (Unrecordable, RecursionError):
        return None
    return written if _same(rebuilt, obj) else None


def rebuild(record: Any, model: type[M]) -> M:
    """The model ``record`` was made of, built without validation; :class:`Unrecordable` when it does not fit
    ``model`` (a record of another definition, or damaged)."""
    return _rebuild(record, model)


_DEFINITIONS: dict[type[BaseModel], str | None] = {}


def _models(model: type[BaseModel]) -> list[type[BaseModel]]:
    """``model`` and every model class its fields hold, each once."""
    found = [model]
    for cls in found:
        pending = list(_fields(cls).values())
        while pending:
            shape = pending.pop()
            if shape[0] == "model" and shape[1] not in found:
                found.append(shape[1])
            elif shape[0] in ("tuple", "list", "dict"):
                pending.append(shape[1])
            elif shape[0] == "union":
                pending.extend(shape[1])
    return found


def definition(model: type[BaseModel]) -> str | None:
    """A hash of what validating as ``model`` depends on: pydantic's and pydantic-core's versions, and
    :func:`~.sources.source_digest` of the modules defining ``model`` and the models its fields hold (their
    validators are there), and of the modules each of those classes names in its ``definition_modules`` class
    variable (where a validator's helpers live, when not beside it). ``None`` when a source cannot be read (or such
    a module is not imported), or the model has no record: then nothing is trusted. Once per class."""
    if model not in _DEFINITIONS:
        try:
            classes = _models(model)
            modules = {cls.__module__ for cls in classes}
            modules.update(name for cls in classes for name in getattr(cls, "definition_modules", ()))
            _DEFINITIONS[model] = source_digest(modules, salt=_SALT)
        except Unrecordable:
            _DEFINITIONS[model] = None
    return _DEFINITIONS[model]


def _fields_of(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return {name: getattr(value, name) for name in type(value).model_fields}
    raise TypeError(f"{type(value).__name__} is not JSON data")


def dumps(value: Any, fallback: Callable[[], Any], **options: Any) -> str:
    """``json.dumps(value, **options)``, each model ``value`` holds written as its fields, as
    ``model_dump(mode="json")`` writes them. Where the two could part ways (a NaN or an infinity, which pydantic
    writes as null; a type JSON has no form for), ``json.dumps(fallback(), **options)`` instead: the caller's
    ``model_dump`` of the same data."""
    try:
        return json.dumps(value, default=_fields_of, allow_nan=False, **options)
    except (ValueError, TypeError):
        return json.dumps(fallback(), **options)
