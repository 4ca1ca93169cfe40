"""JSON-RPC 2.0: envelopes, the method registry, and the one place errors get codes.

A frame is one JSON value (an object, or an array for a batch). The
envelope is checked first; params are then decoded by the method's own
msgspec type, built once at registration, so a bad field comes back as
-32602 with the path msgspec reports (``$.limit``), and checked across
fields (:meth:`Params.check`).

What a method needs is declared where it is registered, and enforced here
alone: a method a person alone may call names the action an agent session
is refused (``person=``), and so is a person who has not proven presence
while it is on (the caller's ``session`` says which, see
:attr:`hikmahd.context.Context.session`); a method whose handler blocks (a
long read, a file) is registered with :meth:`Registry.blocking` and runs off
the event loop through the daemon's one offload hook.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from hikmah.access.principal import refuse_in_agent_session
from hikmah.model.errors import HikmahError
from hikmah.model.wire.base import Params
from hikmah.model.wire.methods import METHODS

from .scheduling import Offload, in_thread

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# Application errors, by the stable reasons of hikmah.model.errors.REASONS (-32000...-32099);
# invalid is -32602 (invalid params) and internal -32603.
APPLICATION_CODES = {
    "secret_detected": -32001,
    "agent_restricted": -32002,
    "not_found": -32003,
    "policy": -32004,
    "conflict": -32005,
    "too_large": -32006,
    "provenance": -32007,
    "store_full": -32008,
    "ledger": -32009,
    "forbidden": -32010,
    "unavailable": -32011,
    "presence_required": -32012,
    "presence_denied": -32013,
}

JSON = Any
# msgspec ends a validation error with " - at `$.field`".
_PATH = re.compile(r" - at `(\$[^`]*)`$")
# A handler: async, or a plain function when it blocks.
Handler = TypeVar("Handler", bound=Callable[..., Any])


class RpcError(Exception):
    """An error answered to the client as it is."""

    def __init__(self, code: int, message: str, data: JSON = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def to_json(self) -> dict[str, JSON]:
        error: dict[str, JSON] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


# The action a method (or, given its params, a call of it) asks of a person alone.
Person = str | Callable[[Any], str | None] | None


@dataclass(frozen=True)
class Method:
    name: str
    params: type[msgspec.Struct]
    result: type[Any]  # a Result, or the plain type of a reply that is not an object
    handler: Callable[[Any, Any], Any]  # async, or a plain function when blocking
    person: Person = None
    blocking: bool = False
    # Served before the daemon has read person presence (the first moments of a start):
    # it reads no presence (not the caller's session); every other method waits for it.
    early: bool = False
    # The params' decoder, built once here: a request's params are decoded from their
    # bytes straight into the method's type.
    decoder: msgspec.json.Decoder[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decoder", msgspec.json.Decoder(self.params))

    def action_for_person(self, params: Any) -> str | None:
        """What an agent session would be refused in this call (None: nothing)."""
        return self.person(params) if callable(self.person) else self.person


class Registry:
    """Methods by wire name. Registering a name twice is a programming error."""

    def __init__(self) -> None:
        self.methods: dict[str, Method] = {}

    def method(
        self,
        name: str,
        params: type[msgspec.Struct] | None = None,
        result: type[Any] | None = None,
        *,
        person: Person = None,
        early: bool = False,
    ) -> Callable[[Handler], Handler]:
        """Register ``async handler(context, params)`` under ``name`` (``noun.verb``), which
        takes and answers what :data:`hikmah.model.wire.methods.METHODS` says (``params``
        and ``result`` say it instead, for a method of no table); ``person`` names what an
        agent session is refused; ``early``: it reads no person presence, so it is served
        while presence is still being read at start."""

        def register(handler: Handler) -> Handler:
            signature = _signature(name, params, result)
            self._add(Method(name, *signature, handler, person, early=early))
            return handler

        return register

    def blocking(
        self,
        name: str,
        params: type[msgspec.Struct] | None = None,
        result: type[Any] | None = None,
        *,
        person: Person = None,
    ) -> Callable[[Handler], Handler]:
        """Register ``handler(context, params)``, which blocks: it runs off the event loop."""

        def register(handler: Handler) -> Handler:
            signature = _signature(name, params, result)
            self._add(Method(name, *signature, handler, person, blocking=True))
            return handler

        return register

    def _add(self, method: Method) -> None:
        if method.name in self.methods:
            raise RuntimeError(f"JSON-RPC method {method.name} registered twice")
        self.methods[method.name] = method

    def include(self, other: Registry) -> None:
        """Serve ``other``'s methods too (a module of methods keeps its own registry)."""
        for method in other.methods.values():
            self._add(method)


def _signature(
    name: str, params: type[msgspec.Struct] | None, result: type[Any] | None
) -> tuple[type[msgspec.Struct], type[Any]]:
    """A method's params and result types: as given, else the wire's table's."""
    if params is not None and result is not None:
        return params, result
    signature = METHODS.get(name)
    if signature is None or params is not None or result is not None:
        raise RuntimeError(f"JSON-RPC method {name}: give both its types, or neither (the table's)")
    return signature


def error_for(exc: HikmahError) -> RpcError:
    """The JSON-RPC error for a kernel error: its reason keeps its meaning on the wire."""
    if exc.reason == "invalid":
        return RpcError(INVALID_PARAMS, str(exc), {"reason": "invalid"})
    code = APPLICATION_CODES.get(exc.reason, INTERNAL_ERROR)
    return RpcError(code, str(exc), {"reason": exc.reason})


def response(request_id: JSON, *, result: JSON = None, error: RpcError | None = None) -> JSON:
    if error is not None:
        return {"jsonrpc": "2.0", "error": error.to_json(), "id": request_id}
    return {"jsonrpc": "2.0", "result": result, "id": request_id}


async def _ready() -> None:
    """Nothing to wait for (a dispatcher without a store)."""


class Dispatcher:
    """Turns one decoded frame into its response (None: nothing to send back).

    The context a handler gets is the caller's (its ``session`` decides the
    person-only methods); blocking handlers run through ``offload``.
    """

    def __init__(
        self,
        *registries: Registry,
        offload: Offload = in_thread,
        ready: Callable[[], Awaitable[None]] = _ready,
    ) -> None:
        """``ready`` returns once the caller's session can be known (the daemon's:
        :meth:`~hikmahd.services.Services.presence_read`); a method not ``early`` waits
        for it."""
        self.registry = Registry()
        self.offload = offload
        self.ready = ready
        for registry in registries:
            self.registry.include(registry)

    async def frame(self, data: bytes, context: Any) -> JSON | None:
        """The response to one frame's bytes (None: nothing to send back).

        A frame is read as its members' bytes, each decoded when it is needed. A member
        whose bytes are not JSON after all (a number out of range, text that is not
        UTF-8) makes the frame unparseable, as when frames were decoded whole: a batch
        is decoded whole before any of it runs, and a request is before it is answered
        with an error or nothing, unless all of it was decoded already.
        """
        try:
            message = _decode_frame(data)
        except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep
            return _parse_error(_not_json(data) or exc)
        if isinstance(message, list) and (problem := _not_json(data)) is not None:
            return _parse_error(problem)
        if isinstance(message, list):
            if not message:
                return response(None, error=RpcError(INVALID_REQUEST, "empty batch"))
            replies = [await self.request(_decode_item(item), context) for item in message]
            answered = [reply for reply in replies if reply is not None]
            return answered or None
        try:
            reply = await self.request(message, context)
        except (msgspec.DecodeError, RecursionError) as exc:
            return _parse_error(_not_json(data) or exc)
        if (reply is None or "error" in reply) and (problem := _not_json(data)) is not None:
            return _parse_error(problem)
        return reply

    async def request(self, message: Request | JSON, context: Any) -> JSON | None:
        """One request object; None for a notification (even one that failed)."""
        if not isinstance(message, dict):
            return response(None, error=RpcError(INVALID_REQUEST, "a request must be an object"))
        request_id = _value(message.get("id"))
        valid_id = request_id is None or (
            isinstance(request_id, (str, int, float)) and not isinstance(request_id, bool)
        )
        notification = "id" not in message
        problem = _envelope_problem(message)
        if problem or not valid_id:
            error = RpcError(INVALID_REQUEST, problem or "id must be a string, number or null")
            return response(request_id if valid_id else None, error=error)
        try:
            result = await self._call(message, context)
        except RpcError as exc:
            return None if notification else response(request_id, error=exc)
        return None if notification else response(request_id, result=result)

    async def _call(self, message: Request, context: Any) -> JSON:
        name = _value(message["method"])
        method = self.registry.methods.get(name)
        if method is None:
            raise RpcError(METHOD_NOT_FOUND, f"no method {name!r}")
        raw = message.get("params")
        if raw is None or _first(raw) == b"[":
            if raw is not None and msgspec.json.decode(raw):
                raise RpcError(
                    INVALID_PARAMS, "params must be an object (by name)", {"reason": "invalid"}
                )
            raw = msgspec.Raw(b"{}")
        try:
            params = method.decoder.decode(raw)
        except msgspec.ValidationError as exc:
            data = {"reason": "invalid"}
            if found := _PATH.search(str(exc)):
                data["path"] = found.group(1)
            raise RpcError(INVALID_PARAMS, f"invalid params: {exc}", data) from None
        try:
            if isinstance(params, Params):
                params.check()
            if not method.early:
                await self.ready()
            action = method.action_for_person(params)
            if action is not None:
                refuse_in_agent_session(context.session, action)
            if method.blocking:
                return await self.offload(lambda: method.handler(context, params))
            return await method.handler(context, params)
        except HikmahError as exc:
            raise error_for(exc) from None
        except RpcError:
            raise
        except Exception:
            log.exception("internal error in %s", method.name)
            raise RpcError(INTERNAL_ERROR, "internal error (see the daemon log)") from None


# A request's members, each left as its JSON bytes: the envelope is checked member by
# member, and the params are decoded once, by the method's own type.
Request = dict[str, msgspec.Raw]
_REQUEST = msgspec.json.Decoder(Request)
_BATCH = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()


def _not_json(data: bytes) -> Exception | None:
    """Why a frame decoded whole is not JSON (None: it is), in the words of that decode."""
    try:
        _ANY.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        return exc
    return None


def _parse_error(exc: Exception) -> JSON:
    """The answer to a frame that is not JSON."""
    return response(None, error=RpcError(PARSE_ERROR, f"parse error: {exc}"))


def _first(raw: bytes | msgspec.Raw) -> bytes:
    """The first byte of a JSON value past its whitespace (b"" for none)."""
    stripped = bytes(raw).lstrip(b" \t\r\n")
    return stripped[:1]


def _decode_frame(data: bytes) -> Request | list[msgspec.Raw] | JSON:
    """A frame as a request's members, a batch's items, or (not a request) its value."""
    first = _first(data)
    if first == b"{":
        return _REQUEST.decode(data)
    if first == b"[":
        return _BATCH.decode(data)
    return _ANY.decode(data)


def _decode_item(item: msgspec.Raw) -> Request | JSON:
    """One item of a batch: a request's members, or the value that is not one."""
    return _REQUEST.decode(item) if _first(item) == b"{" else _ANY.decode(item)


def _value(raw: msgspec.Raw | None) -> JSON:
    """An envelope member's value (None when it is absent)."""
    return None if raw is None else _ANY.decode(raw)


def _envelope_problem(message: Request) -> str | None:
    if _value(message.get("jsonrpc")) != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(_value(message.get("method")), str):
        return "method must be a string"
    if "params" in message and _first(message["params"]) not in (b"{", b"["):
        return "params must be an object or an array"
    extra = set(message) - {"jsonrpc", "method", "params", "id"}
    if extra:
        return f"unknown member {sorted(extra)[0]!r}"
    return None
