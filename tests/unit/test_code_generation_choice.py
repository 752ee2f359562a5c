"""How run_dbt reads a dbt command line: which invocations it gives Spark's default code generation
(``reads_whole_history``, ``code_generation_settings``: those that read whole histories, none when
PAYLEDGER_CODEGEN is set), and which target's session it starts (``command_target``). No Spark: the
catalog's answer is a stand-in."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import payledger.dbt
from payledger.dbt import FULL_RECONCILIATION, WHOLE_HISTORY_READS_SETTING, code_generation_settings, reads_whole_history
from payledger.spark import SPARK_CODE_GENERATION, command_target, embedded_target
from payledger.warehouse import VIEW


@pytest.fixture(autouse=True)
def _no_full_refresh_in_the_environment(monkeypatch):
    monkeypatch.delenv("DBT_FULL_REFRESH", raising=False)


def _never_asked() -> bool:
    raise AssertionError("the view's existence was asked")


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--select", "merchant_balance_current", "--full-refresh"),
        ("build", "-f"),
        ("build", "-xf"),  # dbt's short flags combined: fail fast, full refresh
        ("test", "--select", "assert_merchant_balance_current_reconciles", *FULL_RECONCILIATION),
        ("build", "--vars={reconcile_full: true, reconcile_slices: 4}"),
        ("test", "--vars", "{reconcile_full: false}", "--vars", "{reconcile_full: true}"),  # the last wins
    ],
)
def test_full_refreshes_and_full_reconciliations_read_whole_histories(args):
    assert reads_whole_history(args, _never_asked)


@pytest.mark.parametrize(
    "args",
    [
        ("test",),
        ("test", "--full-refresh"),  # a test has nothing to refresh
        ("test", "--vars", '{"reconcile_full": false}'),
        ("test", "--vars", '{"reconcile_slices": 4}'),
        ("test", "--vars", "{reconcile_full: true}", "--vars", "{reconcile_full: false}"),
        ("seed", "--full-refresh"),  # a seed reads its CSV file only
        ("source", "freshness"),
        ("snapshot",),
        ("run-operation", "stage_external_sources", "--vars", '{"reconcile_full": true}'),
    ],
)
def test_other_invocations_do_not_and_never_ask_for_the_view(args):
    assert not reads_whole_history(args, _never_asked)


@pytest.mark.parametrize("command", ["build", "run"])
def test_a_build_before_the_view_exists_reads_whole_histories(command):
    assert reads_whole_history((command, "--exclude", "resource_type:test"), lambda: False)
    assert not reads_whole_history((command, "--exclude", "resource_type:test"), lambda: True)


@pytest.mark.parametrize("value", ["True", "1", "on"])
def test_dbt_full_refresh_in_the_environment_counts(monkeypatch, value):
    monkeypatch.setenv("DBT_FULL_REFRESH", value)
    assert reads_whole_history(("build",), lambda: True)


def _session(exists: bool, asked: list[str]) -> SimpleNamespace:
    return SimpleNamespace(catalog=SimpleNamespace(tableExists=lambda name: asked.append(name) or exists))


def test_the_settings_are_sparks_code_generation_over_whole_histories_only(monkeypatch):
    monkeypatch.setattr(payledger.dbt, "CODEGEN_ENV", "PAYLEDGER_CODEGEN_UNSET_IN_THIS_TEST")
    asked: list[str] = []
    assert code_generation_settings(("build",), _session(False, asked)) == SPARK_CODE_GENERATION
    assert asked == [VIEW]
    # A batch's build: only the setting that lets a model compile what reads whole histories.
    assert code_generation_settings(("build",), _session(True, asked)) == {WHOLE_HISTORY_READS_SETTING: json.dumps(SPARK_CODE_GENERATION)}
    assert code_generation_settings(("build", "--full-refresh"), None) == {}  # the Thrift target


def test_a_set_payledger_codegen_holds_for_every_run(monkeypatch):
    monkeypatch.setenv(payledger.dbt.CODEGEN_ENV, "false")
    assert code_generation_settings(("build", "--full-refresh"), _session(False, [])) == {}


@pytest.mark.parametrize("text", ["{reconcile_full: [", "reconcile_full", "[1, 2]"])
def test_vars_that_are_not_a_mapping_are_left_to_dbt(text):
    assert not reads_whole_history(("test", "--vars", text), _never_asked)


@pytest.mark.parametrize(
    ("args", "environment", "target"),
    [
        (("build", "--target", "iceberg"), {}, "iceberg"),
        (("build", "-t", "iceberg", "--select", "merchant_balance_current"), {}, "iceberg"),
        (("build", "--target=iceberg"), {}, "iceberg"),
        (("run",), {"DBT_TARGET": "iceberg"}, "iceberg"),
        (("run", "--target", "thrift"), {"DBT_TARGET": "iceberg"}, "thrift"),  # the line wins
        (("source", "freshness", "-t", "iceberg"), {}, "iceberg"),  # a group's subcommand
        (("docs", "generate", "--target=iceberg"), {}, "iceberg"),
        (("build", "--select", "merchant_balance_current"), {}, "delta"),
    ],
)
def test_the_target_of_a_command_line_is_the_one_dbt_reads(monkeypatch, args, environment, target):
    """run_dbt starts the Spark session of the target dbt will use: a session of another format
    would be the one dbt-spark's ``session`` method reuses."""
    monkeypatch.delenv("PAYLEDGER_TARGET", raising=False)
    monkeypatch.setenv("PAYLEDGER_FORMAT", "delta")
    for name in ("DBT_TARGET", "DBT_ENGINE_TARGET"):  # dbt's --target reads both
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert command_target(args) == target
    assert embedded_target(args) == (target != "thrift")
