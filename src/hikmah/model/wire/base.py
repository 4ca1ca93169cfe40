"""The two bases of the wire's types: unknown fields are an error, not ignored."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec


class Params(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every method's params."""

    def check(self) -> None:
        """Rules across fields that a type cannot say (run after decoding).

        Raises:
            InvalidInput: the params break one.
        """


class NoParams(Params, frozen=True):
    """The params of a method that takes none."""


class Result(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every method's result: the reply's ``result`` member, in field order."""


class Signature(NamedTuple):
    """What a method takes and what it answers."""

    params: type[Params]
    result: type[Any]  # a Result, or the plain type of a reply that is not an object
