"""What the kernel's property tests share: random stores and queries, and their settings."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def examples(count: int) -> settings:
    """Settings of a property test over stores made in a fixture's temp dir."""
    return settings(
        max_examples=count,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


def query_of(words: list[str]) -> st.SearchStrategy[list[str]]:
    """A random query of one to four of ``words``."""
    return st.lists(st.sampled_from(words), min_size=1, max_size=4)


def notes_of(words: list[str], *, longest: int, most: int) -> st.SearchStrategy[list[list[str]]]:
    """Random stores for property tests: up to ``most`` notes of up to ``longest`` of
    ``words`` each."""
    return st.lists(
        st.lists(st.sampled_from(words), min_size=1, max_size=longest), min_size=1, max_size=most
    )
