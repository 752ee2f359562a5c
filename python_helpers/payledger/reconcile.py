"""``payledger reconcile``: compare the balance view with a recomputation from canonical history,
outside a build.

A scheduled build reconciles one rotating slice of the keys (dbt_project.yml's vars
``reconcile_slices`` and ``reconcile_full``; ``macros/reconciliation/``). ``reconcile(full=True)``
runs the reconciliation and conservation tests on every key, for a nightly job and for CI. It runs
under the warehouse's build lock (the tests replace their stored failures and append to the runs
table, as a build's do), so never beside a build.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from payledger.currencies import format_amount
from payledger.dbt import FULL_RECONCILIATION, run_dbt
from payledger.locks import build_lock
from payledger.spark import default_warehouse, get_spark
from payledger.warehouse import RECONCILIATION_FAILURES, RECONCILIATION_RUNS

#: The dbt tests ``reconcile`` runs: the reconciliation and the conservation identity.
TESTS = ("assert_merchant_balance_current_reconciles", "assert_merchant_balance_current_conserves_money")
#: Stored failure rows a report lists at most.
LISTED = 100


@dataclass
class Reconciliation:
    """What one ``reconcile`` compared and found: ``success`` (both tests passed), the dbt
    ``invocation_id``, its row of the runs table (``run``: build_seq, slices, checked_slices,
    failures, is_full, status, reconciled_at; None when the test did not run), the tests' statuses
    (``tests``: name -> pass, fail, error, skipped or "not run") and the keys found wrong (``failures``: the
    stored failure rows, at most ``LISTED``, every value a string: amounts in the currency's major
    unit as decimal strings with its minor unit of decimals, ``currencies.format_amount``) and
    dbt's ``errors`` (one line per failed node)."""

    success: bool
    invocation_id: str
    run: dict[str, Any] | None
    tests: dict[str, str]
    failures: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def as_json(self) -> str:
        return json.dumps(
            {
                "success": self.success,
                "invocation_id": self.invocation_id,
                "run": self.run,
                "tests": self.tests,
                "failures": self.failures,
                "errors": self.errors,
            },
            default=str,
        )


def reconcile(full: bool = True, wait_s: float = 0.0) -> Reconciliation:
    """Run the reconciliation and conservation tests (``dbt test``) on the embedded warehouse under
    the build lock: on every key when ``full``, else on the next rotating slice, as a build would.

    Raises ``locks.BuildLocked`` when a build holds the lock past ``wait_s`` seconds. A failed test
    is not an exception: ``success`` is false and ``failures`` names the keys.
    """
    args = ("test", "--select", *TESTS, *(FULL_RECONCILIATION if full else ()))
    with build_lock(default_warehouse(), wait_s):
        invocation = run_dbt(*args)
        spark = get_spark()
        run = _run_row(spark, invocation.invocation_id)
        failures = []
        if spark.catalog.tableExists(RECONCILIATION_FAILURES):
            failures = [
                {name: _text(value, row["currency"]) for name, value in row.asDict().items()}
                for row in spark.sql(f"select * from {RECONCILIATION_FAILURES} order by merchant_id, currency limit {LISTED}").collect()
            ]
    tests = {name: _status(invocation, name) for name in TESTS}
    errors = invocation.failures() or ([str(invocation.exception)] if invocation.exception else [])
    return Reconciliation(invocation.success, invocation.invocation_id, run, tests, failures, errors)


def _status(invocation, name: str) -> str:
    try:
        return invocation.status(name)
    except KeyError:
        return "not run"


def _run_row(spark, invocation_id: str) -> dict[str, Any] | None:
    if not spark.catalog.tableExists(RECONCILIATION_RUNS):
        return None
    rows = spark.sql(f"select * from {RECONCILIATION_RUNS} where invocation_id = '{invocation_id}'").collect()
    return rows[0].asDict() if rows else None


def _text(value: Any, currency: str | None) -> str | None:
    """A failure row's value as a string; amounts (the row's only decimals) at ``currency``'s minor unit."""
    if value is None:
        return None
    return format_amount(value, currency) if isinstance(value, Decimal) else str(value)
