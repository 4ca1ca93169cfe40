"""The cases file of the retrieval evaluation (:mod:`hikmah.evaluation.harness`): its
format, read and checked.

The cases file (TOML)::

    now = "2026-11-30T12:00:00Z"    # the evaluation clock: ages and deadlines count from it

    [[trace]]
    key = "webapp-db-version-old"   # a local name, used by expect and supersedes
    content = "The web app runs on Postgres 14."
    kind = "belief"                 # any kind but prediction
    tags = ["webapp", "db"]         # optional, like every field below
    age_days = 200                  # created this long before now (default 0)
    verified = false
    source = "human:sam"
    confidence = 0.8                # and salience, authority: in [0, 1]
    claim_key = "webapp.db.version" # with claim_value, both or neither
    claim_value = "14"
    supersedes = "some-earlier-key" # a key written earlier in the file
    scope = "project:webapp"
    deadline_days = 3               # commitments: due this long after now (negative: overdue)

    [[case]]
    name = "webapp-db-version"      # optional; "case N" otherwise
    query = "which postgres version does the web app use"
    tags = ["webapp"]               # optional: a tag cue (Hikmah only)
    kinds = ["belief"]              # optional: a filter, applied to both engines
    scope = "project:webapp"        # optional: a filter, applied to both engines
    k = 5                           # optional: overrides --k
    expect = ["webapp-db-version-new"]      # keys that must be in the top k
    must_include = ["Postgres 16"]          # text some top-k content must hold
    must_not_include = ["Postgres 14"]      # text no top-k content may hold

    [[case]]
    query = "what are the rules of cricket"
    nothing = true                          # off-topic: nothing of the file answers it

A file that is not TOML of this shape (an unknown field, a value out of range), or
whose keys and names do not hold together (an empty or repeated key, a reference to a
key not written earlier, a repeated case name, a case expecting an unknown key or one
the file supersedes, which is never recalled), is refused whole, saying what is wrong.
"""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import msgspec

from hikmah.model.errors import InvalidInput
from hikmah.model.vocabulary import Kind

Share = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class _Spec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class TraceSpec(_Spec, frozen=True):
    """One ``[[trace]]`` table: a trace to write, under a local ``key``."""

    key: str
    content: str
    kind: Kind
    tags: tuple[str, ...] = ()
    age_days: Annotated[float, msgspec.Meta(ge=0.0)] = 0.0
    verified: bool = False
    source: str | None = None
    confidence: Share | None = None
    salience: Share | None = None
    authority: Share | None = None
    claim_key: str | None = None
    claim_value: str | None = None
    supersedes: str | None = None
    scope: str | None = None
    deadline_days: float | None = None


class Case(_Spec, frozen=True):
    """One ``[[case]]`` table: a query and what its top k must (not) hold."""

    query: str
    name: str | None = None
    tags: tuple[str, ...] = ()
    kinds: tuple[Kind, ...] = ()
    scope: str | None = None
    k: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    expect: tuple[str, ...] = ()
    must_include: tuple[str, ...] = ()
    must_not_include: tuple[str, ...] = ()
    nothing: bool = False  # off-topic: the right answer is no result at all

    def __post_init__(self) -> None:
        if self.nothing and (self.expect or self.must_include):
            raise ValueError("an off-topic case (nothing = true) expects no result")


class CaseFile(_Spec, frozen=True):
    """A whole cases file. A naive ``now`` is taken as UTC."""

    now: datetime
    trace: tuple[TraceSpec, ...]
    case: tuple[Case, ...]

    @property
    def now_ms(self) -> int:
        now = self.now if self.now.tzinfo else self.now.replace(tzinfo=UTC)
        return int(now.timestamp() * 1000)

    def superseded(self) -> frozenset[str]:
        """Keys of the traces another trace of the file supersedes."""
        return frozenset(t.supersedes for t in self.trace if t.supersedes is not None)


def parse_cases(text: str, *, origin: str = "cases") -> CaseFile:
    """Decode and check a cases file.

    Raises:
        InvalidInput: naming ``origin`` and what is wrong (bad TOML, an unknown
            field with its path, a duplicate key, a dangling reference).
    """
    try:
        data = tomllib.loads(text)
        cases = msgspec.convert(data, CaseFile)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{origin}: not valid TOML: {exc}") from None
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"{origin}: {exc}") from None
    seen: set[str] = set()
    for spec in cases.trace:
        if not spec.key.strip():
            raise InvalidInput(f"{origin}: a trace has an empty key")
        if spec.key in seen:
            raise InvalidInput(f"{origin}: trace key {spec.key!r} is used twice")
        if spec.supersedes is not None and spec.supersedes not in seen:
            raise InvalidInput(
                f"{origin}: trace {spec.key!r} supersedes {spec.supersedes!r},"
                " which is not a key written earlier in the file"
            )
        seen.add(spec.key)
    superseded = cases.superseded()
    names: set[str] = set()
    for number, case in enumerate(cases.case, start=1):
        name = case_name(case, number)
        if name in names:
            raise InvalidInput(f"{origin}: case name {name!r} is used twice")
        names.add(name)
        for key in case.expect:
            if key not in seen:
                raise InvalidInput(f"{origin}: case {name!r} expects unknown key {key!r}")
            if key in superseded:
                raise InvalidInput(
                    f"{origin}: case {name!r} expects {key!r}, which is superseded"
                    " and never recalled"
                )
    return cases


def load_cases(path: Path) -> CaseFile:
    """Read and check the cases file at ``path``.

    Raises:
        InvalidInput: it cannot be read or is not a valid cases file.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot be read: {exc}") from None
    return parse_cases(text, origin=str(path))


def case_name(case: Case, number: int) -> str:
    return case.name or f"case {number}"
