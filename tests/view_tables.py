"""Tables shaped like ``merchant_balance_current``, for the tests of publication and serving, which
read a view's files without Spark (``deltalake`` writes them). The columns and types are the
view's contract in ``models/marts/ledger/_ledger__models.yml``, read from there, so that these
tables follow the model."""

from __future__ import annotations

import functools
import re
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "models" / "marts" / "ledger" / "_ledger__models.yml"


def _arrow_type(data_type: str) -> pa.DataType:
    """The Arrow type a Delta reader returns for a Spark SQL ``data_type`` of the contract."""
    if decimal := re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", data_type):
        return pa.decimal128(int(decimal[1]), int(decimal[2]))
    types = {"string": pa.string(), "bigint": pa.int64(), "timestamp": pa.timestamp("us", tz="UTC")}
    if data_type not in types:
        raise ValueError(f"no Arrow type for the contract's data_type {data_type!r}")
    return types[data_type]


@functools.cache
def view_schema() -> pa.Schema:
    """The view's columns, in the contract's order, with their Arrow types."""
    models = yaml.safe_load(CONTRACT.read_text())["models"]
    view = next(model for model in models if model["name"] == "merchant_balance_current")
    return pa.schema([(column["name"], _arrow_type(column["data_type"])) for column in view["columns"]])


def view_row(merchant_id: str, currency: str, available, pending, reserve, source_watermark: int | None, **columns) -> dict:
    """One row of the view: its key, the three balances (strings or Decimals, major units), its
    watermark and any other column by name."""
    balances = {"available_balance": available, "pending_balance": pending, "reserve_hold": reserve}
    return {"merchant_id": merchant_id, "currency": currency, **balances, "source_watermark": source_watermark, **columns}


def view_table(rows: list[dict]) -> pa.Table:
    """A table of ``rows`` (dicts by column name; amounts as strings or Decimals; a column a row
    does not name is null) with every column of the view's contract."""

    def value(field: pa.Field, raw):
        return Decimal(raw) if pa.types.is_decimal(field.type) and isinstance(raw, str) else raw

    return pa.table({f.name: pa.array([value(f, row.get(f.name)) for row in rows], f.type) for f in view_schema()})
