"""The JVM class archive that ``make setup`` writes (``payledger.class_archive``) is the one a Spark
driver started from the profile maps: made with the class path the profile gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from payledger.class_archive import DEFAULT_ARCHIVE

pytestmark = pytest.mark.integration


def test_a_spark_driver_maps_the_class_archive_that_setup_made(spark):
    assert DEFAULT_ARCHIVE.is_file(), f"make setup wrote no class archive ({DEFAULT_ARCHIVE}.log says why)"
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    # Address, permissions, offset, device, inode, then the path, which may hold spaces.
    mapped = {fields[5] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if len(fields := line.split(maxsplit=5)) == 6}
    assert str(DEFAULT_ARCHIVE.resolve()) in mapped, sorted(path for path in mapped if path.endswith(".jsa"))
