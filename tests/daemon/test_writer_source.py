"""A write that names no source is kept under its writer's: the person's own
``human:<login>`` from their terminal, an agent's ``agent:<host>``."""

from __future__ import annotations

import json

from hikmah.model.paths import person_source
from tests.harness.daemon import Running
from tests.harness.environment import clean_env


def test_a_persons_writes_default_to_the_person(daemon: Running) -> None:
    person = person_source()
    assert person.startswith("human:") and person != "human:"
    written = json.loads(daemon.cli("remember", "deploys go through CI", "--json").stdout)
    assert written["trace"]["provenance"]["source"] == person
    named = daemon.call("memory.remember", content="staging is eu-west", source="tool:notes")
    assert named["trace"]["provenance"]["source"] == "tool:notes"

    invalidated = json.loads(
        daemon.cli(
            "invalidate", "deploys go through CI", "--reason", "from laptops", "--yes", "--json",
            env=clean_env(),
        ).stdout
    )  # fmt: skip
    (correction,) = invalidated["written"]
    shown = daemon.call("memory.show", id=correction["correction"])["trace"]
    assert shown["provenance"]["source"] == person and shown["provenance"]["verified"]

    forecast = daemon.call("memory.predict", family="ci", question="green?", type="noul", p=0.7)
    assert forecast["trace"]["provenance"]["source"] == person
    observed = daemon.call("memory.outcome", prediction=forecast["trace"]["id"], observed="yes")
    assert observed["trace"]["provenance"]["source"] == person


def test_an_agents_writes_default_to_the_agent(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.call("session.restrict", host="codex", session_id="s1")
        forecast = conn.call("memory.predict", family="ci", question="green?", type="noul", p=0.7)
        assert forecast["trace"]["provenance"]["source"] == "agent:codex"
        conn.call("memory.remember", content="the cache is redis")
        plan = conn.call("memory.invalidate", pattern="the cache is redis", reason="now memcached")
        correction = conn.call("memory.show", id=plan["written"][0]["correction"])["trace"]
    assert correction["provenance"]["source"] == "agent:codex"
    assert not correction["provenance"]["verified"]
