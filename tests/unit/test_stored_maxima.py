"""The stored maxima run_watermarks takes from Delta logs (``payledger.stored_maxima``): the largest
value of each whole-number column as the files' statistics give it, and nothing where they cannot
say it (files without the column's statistics, tables with deletion vectors)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from payledger.stored_maxima import delta_long_maxima


def write(folder, columns: dict[str, list], mode: str = "append", configuration: dict[str, str] | None = None) -> None:
    table = pa.table({name: pa.array(values, type=pa.int64() if name != "label" else pa.string()) for name, values in columns.items()})
    write_deltalake(str(folder), table, mode=mode, configuration=configuration)


def test_the_largest_stored_value_of_each_whole_number_column_over_every_file(tmp_path):
    events = tmp_path / "payledger_raw.db" / "payment_events"
    write(events, {"ingest_seq": [1, 7, 3], "unit": [None, None, None], "label": ["a", "b", "c"]})
    write(events, {"ingest_seq": [5, 11], "unit": [None, 4], "label": ["d", "e"]})
    write(tmp_path / "payledger.db" / "empty_table", {"ingest_seq": [], "label": []})
    maxima = delta_long_maxima(tmp_path)
    assert maxima == {"payledger_raw.payment_events.ingest_seq": 11, "payledger_raw.payment_events.unit": 4, "payledger.empty_table.ingest_seq": None}


def test_a_column_some_file_has_no_statistics_for_is_left_to_spark(tmp_path):
    # Statistics on the first column only: the second is not listed, the first is.
    folder = tmp_path / "payledger.db" / "two_columns"
    write(folder, {"ingest_seq": [1, 2], "source_watermark": [10, 20]}, configuration={"delta.dataSkippingNumIndexedCols": "1"})
    assert delta_long_maxima(tmp_path) == {"payledger.two_columns.ingest_seq": 2}


def test_a_table_whose_readers_need_table_features_is_left_to_spark(tmp_path):
    write(tmp_path / "payledger.db" / "merged", {"source_watermark": [3, 9]}, configuration={"delta.enableDeletionVectors": "true"})
    write(tmp_path / "payledger.db" / "plain", {"source_watermark": [3, 9]})
    (tmp_path / "payledger.db" / "not_a_table" / "_delta_log").mkdir(parents=True)
    assert delta_long_maxima(tmp_path) == {"payledger.plain.source_watermark": 9}
