"""``NamedTuple`` for the bot side, without ``typing`` or ``collections``.

A bot process imports ``cow006._view``, whose ``Table`` is a named tuple.  ``typing.NamedTuple``
(``typing``, ``re``, ``collections``, ``functools`` ...) costs a bot process more start-up
time than all of the SDK's own modules together, so the bot side builds its named tuples
here, the way ``collections.namedtuple`` does (``_collections._tuplegetter``, a C type built
into the interpreter): a tuple subclass with one read-only property per field, ``_fields``,
``_make``, ``_replace``, ``_asdict``, the same ``repr`` and pickling by value.

Type checkers see ``typing.NamedTuple`` (the modules import it under ``TYPE_CHECKING``); at run
time ``class Table(NamedTuple)`` comes here.  Fields with defaults are not needed and not
supported.
"""

from __future__ import annotations

# The C descriptor collections.namedtuple uses (no stub: it is private to collections).
from _collections import _tuplegetter  # type: ignore[import-not-found]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _make_class(name: str, ns: dict[str, Any]) -> type:
    fields = tuple(ns.get("__annotations__", {}))
    for field in fields:
        if field in ns:
            raise TypeError(f"{name}.{field}: defaults are not supported here")
    arglist = ", ".join(fields)
    # The same constructor as collections.namedtuple's: positional or keyword arguments.
    code = f"lambda _cls, {arglist}: _tuple_new(_cls, ({arglist}{',' if fields else ''}))"
    new = eval(code, {"_tuple_new": tuple.__new__, "__builtins__": {}})
    new.__name__ = "__new__"
    new.__doc__ = f"Create new instance of {name}({arglist})"
    repr_fmt = "(" + ", ".join(f"{f}=%r" for f in fields) + ")"

    def __repr__(self: tuple[Any, ...]) -> str:
        return self.__class__.__name__ + repr_fmt % self

    def _make(cls: type, iterable: Any) -> Any:
        result: Any = tuple.__new__(cls, iterable)
        if len(result) != len(fields):
            raise TypeError(f"Expected {len(fields)} arguments, got {len(result)}")
        return result

    def _replace(self: tuple[Any, ...], **kwds: Any) -> Any:
        result = self._make(map(kwds.pop, fields, self))  # type: ignore[attr-defined]
        if kwds:
            raise ValueError(f"Got unexpected field names: {list(kwds)!r}")
        return result

    def _asdict(self: tuple[Any, ...]) -> dict[str, Any]:
        return dict(zip(fields, self, strict=True))

    def __getnewargs__(self: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(self)

    body: dict[str, Any] = {
        "__doc__": ns.get("__doc__") or f"{name}({arglist})",
        "__slots__": (),
        "_fields": fields,
        "_field_defaults": {},
        "__new__": new,
        "_make": classmethod(_make),
        "_replace": _replace,
        "__repr__": __repr__,
        "_asdict": _asdict,
        "__getnewargs__": __getnewargs__,
        "__match_args__": fields,
        "__module__": ns.get("__module__"),
        "__qualname__": ns.get("__qualname__", name),
        "__annotations__": ns.get("__annotations__", {}),
    }
    for index, field in enumerate(fields):
        body[field] = _tuplegetter(index, f"Alias for field number {index}")
    for key, value in ns.items():  # methods and docstrings of the class statement
        if key not in body and key not in ("__dict__", "__weakref__"):
            body[key] = value
    return type(name, (tuple,), body)


class _NamedTupleMeta(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if not bases:  # NamedTuple itself
            return super().__new__(mcs, name, bases, ns)
        return _make_class(name, ns)


class NamedTuple(metaclass=_NamedTupleMeta):
    """Subclass to make a named tuple: ``class Point(NamedTuple): x: int; y: int``."""
