"""The project's generic data test, ``valid_rows``: each check it is given fails with the number of
rows that fail it, and a model that passes every check returns nothing."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.integration

# (k, c, v): k is a key alone, (k, c) a key of the rows with v != 'z'; c is never null; v is x or y.
ROWS = [(1, "a", "x"), (1, "a", "y"), (None, "b", "x"), (2, None, "w"), (3, "d", "z"), (3, "d", "z")]
ARGUMENTS = {
    "unique": ["k", {"columns": ["k", "c"], "where": "v != 'z'"}],
    "not_null": ["c"],
    "accepted_values": {"v": ["x", "y"]},
}


def _literal(value) -> str:
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def _relation(rows) -> str:
    values = ", ".join(f"({', '.join(_literal(v) for v in row)})" for row in rows)
    return f"(select * from values {values} as rows(k, c, v))"


def _failures(dbt, spark, rows) -> dict[str, int]:
    """Compile ``valid_rows`` with ``ARGUMENTS`` over ``rows`` (dbt compile --inline) and run it."""
    call = f"{{{{ test_valid_rows(model={json.dumps(_relation(rows))}, **{json.dumps(ARGUMENTS)}) }}}}"
    compiled = dbt("compile", "--inline", call)
    (node,) = compiled.nodes.values()
    return {check: count for check, count in spark.sql(node.node.compiled_code).collect()}


def _expected(rows) -> dict[str, int]:
    """The same checks counted in Python."""

    def key_counts(selected, width):
        keys = [row[:width] for row in selected]
        present = [key for key in keys if None not in key]
        return len(present) - len(set(present)), len(keys) - len(present)

    duplicate_k, null_k = key_counts(rows, 1)
    # SQL: a null v does not satisfy v != 'z'
    duplicate_kc, null_kc = key_counts([row for row in rows if row[2] is not None and row[2] != "z"], 2)
    found = {
        "duplicate key (k)": duplicate_k,
        "null in key (k)": null_k,
        "duplicate key (k, c where v != 'z')": duplicate_kc,
        "null in key (k, c where v != 'z')": null_kc,
        "null c": sum(row[1] is None for row in rows),
        "unaccepted value of v": sum(row[2] not in ("x", "y") for row in rows if row[2] is not None),
    }
    return {check: count for check, count in found.items() if count}


def test_valid_rows_counts_the_rows_that_fail_each_check(dbt, spark):
    expected = _expected(ROWS)
    assert len(expected) == 6, "every check should fail at least once on ROWS"
    assert _failures(dbt, spark, ROWS) == expected
    clean = [(1, "a", "x"), (2, "a", "y"), (3, "b", None)]
    assert _expected(clean) == {}
    assert _failures(dbt, spark, clean) == {}


def test_valid_rows_refuses_a_scope_it_cannot_check(dbt, capsys):
    """``scoped_by`` is an ingest position column or ``{written_at, partition}`` with the partition
    column in every key, and a key checked among the new rows only names a data test of the project
    that checks the earlier ones: anything else is a compiler error that says what was expected (dbt
    prints it while parsing the inline query)."""
    by_test = {"columns": ["k"], "earlier_rows_checked_by": "no_such_test"}
    for scoped_by, unique, message in (
        ({"written_at": "v"}, ARGUMENTS["unique"], "scoped_by is an ingest position column or {written_at: <column>, partition: <column>}"),
        (["k"], ARGUMENTS["unique"], "scoped_by is an ingest position column"),
        ({"written_at": "v", "partition": "c"}, ARGUMENTS["unique"], "the key (k) does not hold the partition column c"),
        ("k", [by_test], "earlier_rows_checked_by names no data test of the project: no_such_test"),
        (None, [{**by_test, "earlier_rows_checked_by": "assert_dedup_index_holds_every_accepted_event"}], "earlier_rows_checked_by needs scoped_by"),
        ("k", [{"columns": ["k"], "checked_by": "x"}], "a unique key is a column, a list of columns or {columns: [...]"),
    ):
        arguments = {**ARGUMENTS, "unique": unique, **({"scoped_by": scoped_by} if scoped_by else {})}
        call = f"{{{{ test_valid_rows(model={json.dumps(_relation(ROWS))}, **{json.dumps(arguments)}) }}}}"
        capsys.readouterr()
        refused = dbt("compile", "--inline", call, check=False)
        assert not refused.success and message in capsys.readouterr().out, (scoped_by, unique, refused.exception)
