"""A reply as the CLI reads it: members as attributes, the JSON printed as it came."""

from __future__ import annotations

import json

import pytest

from hikmah_cli.replies import Reply, as_reply

HISTORY = {"key": "deploy.day", "values": [{"value": "monday", "ids": ["tr_1"]}], "items": 2}


def test_every_object_of_a_reply_reads_its_members_as_attributes() -> None:
    reply = as_reply(HISTORY)
    assert isinstance(reply, Reply) and isinstance(reply.values[0], Reply)
    assert reply.key == "deploy.day"
    assert reply.values[0].ids == ["tr_1"]


def test_a_member_named_like_a_dict_method_is_the_member() -> None:
    reply = as_reply(HISTORY)
    assert reply.values == HISTORY["values"]
    assert reply.get("key") == "deploy.day"  # no member of that name: the dict's method


def test_a_reply_prints_as_it_came_whatever_its_members_are_named() -> None:
    reply = as_reply(HISTORY)
    assert json.dumps(reply) == json.dumps(HISTORY)
    assert dict(reply) == HISTORY


def test_a_member_the_reply_has_not_is_an_attribute_error() -> None:
    reply = as_reply(HISTORY)
    assert getattr(reply, "as_of", None) is None
    with pytest.raises(AttributeError, match="no member 'as_of'"):
        _ = reply.as_of


def test_a_member_named_by_a_keyword_reads_as_its_field_with_an_underscore() -> None:
    reply = as_reply({"checked": 2, "break": {"line": 3, "seq": None, "reason": "x"}})
    assert reply.break_.line == 3
    with pytest.raises(AttributeError, match="no member 'class_'"):
        _ = reply.class_
