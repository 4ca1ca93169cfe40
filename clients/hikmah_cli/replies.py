"""A reply as the CLI reads it: JSON whose objects also read as attributes.

The CLI stays on the standard library (it starts on every shell command and agent
prompt, and msgspec alone would cost it more than its own import), so it does not
decode replies into the wire's Structs as browse and the agent do. It reads them
through :class:`Reply` instead, and its renderers are annotated with the methods'
Result types (:mod:`hikmah.model.wire`, imported for type checking only): mypy checks
every field the CLI reads against the one definition of the reply, and a
``--json`` reply prints exactly as it came.
"""

from __future__ import annotations

from keyword import iskeyword
from typing import Any

# The dict's methods that json.dumps and dict() call on a dict's subclass: a member of
# that name cannot stand in for them.
_MAPPING = frozenset({"items", "keys"})


class Reply(dict[str, Any]):
    """A JSON object whose members read as attributes too (``reply.trace.id``). A member
    comes before the dict's own attribute of its name (a claim history's ``values`` is its
    member, not the dict's method), but for :data:`_MAPPING`; one named by a keyword
    reads as the Result's field does (``break`` as ``break_``)."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        if name not in _MAPPING and dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        return super().__getattribute__(name)

    def __getattr__(self, name: str) -> Any:
        # A member named by a keyword is a field named with an underscore after it.
        if name.endswith("_") and iskeyword(name[:-1]) and dict.__contains__(self, name[:-1]):
            return dict.__getitem__(self, name[:-1])
        raise AttributeError(f"the reply has no member {name!r}")


def as_reply(value: Any) -> Any:
    """``value`` with every JSON object in it a :class:`Reply`."""
    if isinstance(value, dict):
        return Reply((key, as_reply(item)) for key, item in value.items())
    if isinstance(value, list):
        return [as_reply(item) for item in value]
    return value
