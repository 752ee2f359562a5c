"""The manual replay's vars as ``replay_request`` validates them (the macro files through Jinja, no
Spark): each malformed request fails with a message that says what was expected. That the
on-run-start hook fails a build before any model runs, and that an unknown segment or merchant
fails there too, needs dbt and the snapshots: ``test_invalidation.py``."""

from __future__ import annotations

import datetime as dt
import re
from types import SimpleNamespace
from typing import Any

import pytest

from payledger.spark import project_vars
from tests.jinja_macros import environment, macro

#: Malformed requests and a part of the error each must raise; the integration test builds with
#: one of them (BAD_REPLAY_VARS there) to show that the hook stops the build.
MALFORMED = [
    ({"replay_segment": "retail"}, "replay_from must be an ISO date"),
    ({"replay_from": "2026-01-01"}, "exactly one of"),
    ({"replay_segment": "retail", "replay_from": "2026-13-01"}, "not a calendar date"),
    ({"replay_segment": "retail", "replay_from": "2026-02-30"}, "not a calendar date"),
    ({"replay_segment": "retail", "replay_from": "2026-00-10"}, "not a calendar date"),
    ({"replay_segment": "retail'; drop table x; --", "replay_from": "2026-01-01"}, "replay_segment must be a string of letters"),
    ({"replay_merchant": "m 1", "replay_from": "2026-01-01"}, "replay_merchant must be a string of letters"),
    ({"replay_segment": 42, "replay_from": "2026-01-01"}, "replay_segment must be a string"),
    ({"replay_merchant": "r1", "replay_segment": "retail", "replay_from": "2026-01-01"}, "exactly one of"),
    ({"replay_segment": "retail", "replay_from": "2026-01-01' or '1'='1"}, "replay_from must be an ISO date"),
    ({"replay_segment": "retail", "replay_from": 20260101}, "replay_from must be an ISO date"),
]


class CompilerError(Exception):
    """``exceptions.raise_compiler_error``."""


def _raise_compiler_error(message: str) -> None:
    raise CompilerError(message)


def replay_request(variables: dict[str, Any]) -> dict | None:
    """replay_request() with ``--vars`` ``variables`` over the project's own vars, rendered from the
    project's macro files with the parts of dbt's context they use (``var``, ``return``,
    ``exceptions``, ``modules``). Raises CompilerError as dbt would raise its compiler error."""
    scope = project_vars() | variables
    env = environment()
    env.globals.update(
        var=lambda name, default=None: scope.get(name, default),
        exceptions=SimpleNamespace(raise_compiler_error=_raise_compiler_error),
        modules=SimpleNamespace(re=re, datetime=dt),
    )
    env.globals["identifier_pattern"] = macro(env, "identifiers/identifier_pattern.sql", "identifier_pattern")
    return macro(env, "invalidation/replay_request.sql", "replay_request")()


@pytest.mark.parametrize(("variables", "message"), MALFORMED)
def test_a_malformed_replay_request_fails_saying_what_was_expected(variables, message):
    with pytest.raises(CompilerError) as raised:
        replay_request(variables)
    assert message in str(raised.value), str(raised.value)
    assert 'expected --vars \'{"replay_segment": "<segment>", "replay_from": "YYYY-MM-DD"}\'' in str(raised.value)


def test_a_well_formed_request_is_returned_and_no_vars_ask_for_nothing():
    assert replay_request({}) is None
    assert replay_request({"replay_segment": "retail", "replay_from": "2024-02-29"}) == {"segment": "retail", "merchant_id": None, "from_date": "2024-02-29"}
    merchant = replay_request({"replay_merchant": "m-1.a:b_c", "replay_from": "2026-12-31"})
    assert merchant == {"segment": None, "merchant_id": "m-1.a:b_c", "from_date": "2026-12-31"}
