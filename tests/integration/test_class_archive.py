"""The Spark driver runs on the Java runtime that ``make setup`` installed
(``payledger.java_runtime``) and maps the ahead-of-time cache that setup made
(``payledger.class_archive``) with the class path the profile gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from payledger.class_archive import DEFAULT_ARCHIVE
from payledger.java_runtime import bundled_java_home

pytestmark = pytest.mark.integration


def test_a_spark_driver_runs_on_the_bundled_java_runtime(spark):
    system = spark.sparkContext._jvm.java.lang.System
    assert Path(system.getProperty("java.home")).resolve() == bundled_java_home().resolve()
    assert system.getProperty("java.specification.version") == "25"


def test_a_spark_driver_maps_the_class_archive_that_setup_made(spark):
    assert DEFAULT_ARCHIVE.is_file(), f"make setup wrote no ahead-of-time cache ({DEFAULT_ARCHIVE}.log says why)"
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    # Address, permissions, offset, device, inode, then the path, which may hold spaces.
    mapped = {fields[5] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if len(fields := line.split(maxsplit=5)) == 6}
    assert str(DEFAULT_ARCHIVE.resolve()) in mapped, sorted(path for path in mapped if path.endswith(".aot"))
