"""The reconciliation slice predicate as dbt renders it (the macro files through Jinja, no Spark):
its bucket ranges name exactly the checked slices' buckets."""

from __future__ import annotations

import itertools
import random
import re

import jinja2
import pytest

from payledger.spark import PROJECT_ROOT

MACROS = ("reconciliation_bucket", "reconciliation_slice_of", "reconciliation_slice_predicate")
BUCKETS = 4096


def predicate(scope: dict, **kwargs: str) -> str:
    """reconciliation_slice_predicate(scope, **kwargs), rendered from the project's macro files."""
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    source = "".join((PROJECT_ROOT / "macros" / "reconciliation" / f"{name}.sql").read_text() for name in MACROS)
    module = env.from_string(source).make_module()
    return str(module.reconciliation_slice_predicate(scope, **kwargs)).strip()


def slice_of(bucket: int, slices: int) -> int:
    """A bucket's slice, as the README defines it: bucket * N div 4096."""
    return bucket * slices // BUCKETS


def checked_sets(slices: int, rng: random.Random) -> list[list[int]]:
    every = list(range(slices))
    return [[0], [slices - 1], sorted({0, slices - 1}), sorted(rng.sample(every, min(slices, 5))), sorted(rng.sample(every, (slices + 1) // 2))]


@pytest.mark.parametrize("slices", [1, 2, 3, 7, 24, 100, 1000, 4095, 4096])
def test_the_bucket_ranges_name_exactly_the_checked_slices_buckets(slices):
    rng = random.Random(slices)
    for checked in checked_sets(slices, rng):
        scope = {"full": False, "slices": slices, "checked": checked, "build_seq": checked[0]}
        rendered = predicate(scope, bucket="reconciliation_bucket")
        ranges = [(int(low), int(high)) for low, high in re.findall(r"\(reconciliation_bucket >= (\d+) and reconciliation_bucket < (\d+)\)", rendered)]
        covered = {bucket for low, high in ranges for bucket in range(low, high)}
        assert covered == {b for b in range(BUCKETS) if slice_of(b, slices) in checked}, (slices, checked, ranges)
        # Adjacent slices share one range; rows written before the column (null) are kept; the
        # key's own slice test follows.
        assert all(high < next_low for (_, high), (next_low, _) in itertools.pairwise(ranges)), ranges
        assert "or reconciliation_bucket is null) and " in rendered
        assert rendered.endswith(f"(pmod(xxhash64(merchant_id), 4096) * {slices}) div 4096 in ({', '.join(map(str, checked))})")
        assert predicate(scope) == rendered[rendered.index(") and ") + len(") and ") :]
        # As a whole (SQL's and/or precedence is Python's): true for a row whose stored bucket is
        # its key's exactly when the key's slice is checked.
        python = rendered.replace("pmod(xxhash64(merchant_id), 4096)", "key_bucket").replace(" div ", " // ").replace(" is null", " is None")
        compiled = compile(re.sub(r" in \(([^)]*)\)$", r" in {\1}", python), "<sql>", "eval")  # a set: in (3) is not a tuple
        selected = {b for b in range(BUCKETS) if eval(compiled, {}, {"reconciliation_bucket": b, "key_bucket": b})}
        assert selected == {b for b in range(BUCKETS) if slice_of(b, slices) in checked}, (slices, checked)


def test_a_full_reconciliation_is_true_with_or_without_a_bucket_column():
    scope = {"full": True, "slices": 24, "checked": list(range(24)), "build_seq": 5}
    assert predicate(scope) == predicate(scope, bucket="reconciliation_bucket") == "true"
