"""Each identifier's form (merchant id, segment, currency, build) is written once, in dbt_project.yml's
var ``identifier_patterns``: macros ask for it by kind (``identifier_pattern``), Python reads it
(``payledger.spark.project_vars``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from payledger import history
from payledger.spark import project_vars

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = project_vars()["identifier_patterns"]
#: The reference fold of the differential tests keeps its own copy of the input contract (as it
#: keeps its own event types): an oracle that shared the project's definitions would share its
#: mistakes.
ORACLE = "tests/reference.py"


def test_no_file_but_dbt_project_writes_an_identifier_pattern():
    for kind, pattern in PATTERNS.items():
        found = subprocess.run(
            ["git", "grep", "-lF", pattern, "--", ".", ":!dbt_project.yml", f":!{ORACLE}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert found.stdout == "", f"{kind}'s pattern written outside dbt_project.yml: {found.stdout}"


def test_every_kind_a_macro_or_model_asks_for_is_listed():
    asked = set()
    for path in [*ROOT.glob("macros/**/*.sql"), *ROOT.glob("models/**/*.sql")]:
        asked |= set(re.findall(r"identifier_pattern\(\s*['\"](\w+)['\"]", path.read_text()))
    assert asked, "no macro or model calls identifier_pattern"
    assert asked <= set(PATTERNS), asked - set(PATTERNS)


def test_python_checks_use_the_listed_patterns():
    assert history.MERCHANT_PATTERN.fullmatch("m_000042.eu:1-a")
    assert not history.MERCHANT_PATTERN.fullmatch("m 42")
    assert history.CURRENCY_PATTERN.pattern == PATTERNS["currency"]
    assert history.BUILD_PATTERN.pattern == PATTERNS["invocation_id"]
