"""The JVM's ahead-of-time cache that ``make setup`` writes, for Spark's drivers (Java 25).

A new Spark driver loads, verifies and links thousands of classes (Spark, Hive's metastore client,
Derby, Delta, Iceberg) and then spends most of its CPU compiling them, before and while it runs its
first statements. Java 25's ahead-of-time cache (JEP 483, 514, 515) keeps the classes loaded and
linked, with the method profiles of a training run, in a file that each new JVM maps: the profile's
targets pass ``-XX:AOTCache`` (the path in ``PAYLEDGER_CLASS_ARCHIVE``, default
``jars/spark-classes.aot``), so a `payledger` command, a cron build or a newcomer's `dbt build`
starts sooner and reaches compiled code sooner. One JVM runs a small workload of the statements a
build runs, on both table formats, in a temporary warehouse, and records what it loaded and
profiled; as it exits, Java starts a second JVM that writes the cache (``-XX:AOTCacheOutput``).

The cache belongs to the Java runtime (``payledger.java_runtime``) and to the class path it was
made with (the profile's jars, then pyspark's); ``make setup`` makes it again whenever the jars,
the venv, the profile or this module change. Java 25.0.2 does not check that the class path's jars
are unchanged (JDK-8377932, fixed in a later update): a cache older than its jars must be made
again, which the Makefile's dependencies do. Without the file, the JVM starts without one.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from payledger.spark import PROJECT_ROOT

#: Where the profile looks for the cache unless ``PAYLEDGER_CLASS_ARCHIVE`` says otherwise.
DEFAULT_ARCHIVE = PROJECT_ROOT / "jars" / "spark-classes.aot"

#: Statements of a build's kinds (create, merge with row deletes, append, replace, describe,
#: listing, joins and aggregates, time travel, history, maintenance), per format.
_WORKLOAD = {
    "delta": {
        "using": "delta",
        "properties": "tblproperties ('delta.enableDeletionVectors' = 'true')",
        "maintenance": ["optimize {t}", "reorg table {t} apply (purge)", "describe history {t}"],
        "as_of": "version as of 1",
        "listing": "show table extended in archive_training like '*'",
    },
    "iceberg": {
        "using": "iceberg",
        "properties": "tblproperties ('format-version' = '2', 'write.merge.mode' = 'merge-on-read',"
        " 'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read')",
        "maintenance": [
            "call spark_catalog.system.rewrite_data_files(table => '{t}')",
            "select * from {t}.snapshots",
            "select * from {t}.history",
        ],
        "listing": "show tables in archive_training",  # what dbt-spark runs on Iceberg
        "as_of": "",  # time travel needs a snapshot id; its metadata tables are read above
    },
}


def _statements(fmt: str) -> list[str]:
    w = _WORKLOAD[fmt]
    t = "archive_training.balances"
    return [
        "create schema if not exists archive_training",
        f"create table {t} (merchant_id string, currency string, amount decimal(18, 2), day date) using {w['using']} partitioned by (day) {w['properties']}",
        f"insert into {t} select concat('m', id % 7), 'USD', cast(id as decimal(18, 2)), date_add(date'2026-01-01', cast(id % 3 as int)) from range(50)",
        "create or replace temporary view batch as select concat('m', id) as merchant_id, 'USD' as currency,"
        " cast(id * 2 as decimal(18, 2)) as amount, date'2026-01-02' as day from range(10)",
        f"merge into {t} as d using batch as s on d.merchant_id = s.merchant_id and d.day = s.day"
        " when matched then update set * when not matched then insert *",
        f"delete from {t} where merchant_id = 'm1'",
        f"create or replace table archive_training.totals using {w['using']} as select merchant_id, currency,"
        f" sum(amount) as total, max(day) as last_day from {t} group by merchant_id, currency",
        f"select b.merchant_id, sum(b.amount) over (partition by b.merchant_id order by b.day) as running,"
        f" t.total from {t} b join archive_training.totals t using (merchant_id, currency)",
        f"select count(*) from {t} {w['as_of']}",
        f"describe extended {t}",
        w["listing"],
        "show tblproperties archive_training.totals",
        *(s.format(t=t) for s in w["maintenance"]),
        "drop table archive_training.totals",
    ]


def _train(warehouse: Path) -> None:
    """Run the workload on Delta, then (same JVM, a new session) on Iceberg."""
    from payledger.formats import format_named
    from payledger.spark import get_spark

    for fmt in _WORKLOAD:
        os.environ["PAYLEDGER_WAREHOUSE"] = str(warehouse / fmt)
        spark = get_spark(format_named(fmt).target)
        for statement in _statements(fmt):
            spark.sql(statement).collect()
        spark.stop()  # the next format gets a session of its own in the same JVM


def make(archive: Path = DEFAULT_ARCHIVE) -> Path:
    """Write the ahead-of-time cache to ``archive`` (replacing it whole) and return its path.

    Starts one Spark driver with the profile's class path and options, and no cache of its own.
    Raises ``RuntimeError`` if no cache was written (for example a Java before 25).
    """
    from payledger.spark import stop_spark

    partial = archive.with_name(archive.name + ".partial")
    partial.unlink(missing_ok=True)
    os.environ["PAYLEDGER_CLASS_ARCHIVE"] = ""
    # Quoted as the profile quotes its paths: Spark's launcher splits these options at spaces.
    quoted = "'" + str(partial).replace("'", "'\\''") + "'"
    os.environ["PAYLEDGER_JAVA_OPTIONS"] = f"{os.environ.get('PAYLEDGER_JAVA_OPTIONS', '')} -XX:AOTCacheOutput={quoted}"
    with tempfile.TemporaryDirectory(prefix="payledger-class-archive-") as folder:
        _train(Path(folder))
        stop_spark()  # as the JVM exits, a second JVM writes the cache; stop_spark waits for both
    if not partial.exists():
        raise RuntimeError(f"the JVM wrote no ahead-of-time cache to {partial}")
    partial.replace(archive)
    return archive


def main() -> None:
    """``python -m payledger.class_archive [PATH]``: write the cache (default: DEFAULT_ARCHIVE)."""
    path = make(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ARCHIVE)
    print(f"ahead-of-time cache: {path} ({path.stat().st_size // 2**20} MiB)")


if __name__ == "__main__":
    main()
