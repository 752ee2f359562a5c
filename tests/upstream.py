"""The dbt and dbt-spark code this project overrides, and whether it changed since.

Each macro of ours that replaces one of dbt's (same name, or a materialization for Spark) records
in its macro properties (``macros/**/_*.yml``) what it was written against::

    meta:
      upstream:
        package: dbt-spark 1.11.0           # the distribution and version it was read from
        file: dbt/include/spark/macros/materializations/seed.sql
        block: macro spark__load_csv_rows   # the Jinja block: "macro NAME" or "materialization NAME, ADAPTER"
        sha256: ...                         # of that block's text, from its opening tag to its end tag

``tests/unit/test_upstream.py`` hashes the block in the installed package again.
"""

from __future__ import annotations

import hashlib
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MACROS = ROOT / "macros"


@dataclass(frozen=True)
class Override:
    """One of our macros (``name``, defined in ``path``) and the upstream block it replaces."""

    name: str
    path: Path
    package: str
    file: str
    block: str
    sha256: str


def block_text(source: str, block: str) -> str:
    """The text of the Jinja ``block`` ("macro NAME" or "materialization NAME, ADAPTER") in
    ``source``, from its opening tag to its end tag. Raises ``LookupError`` when it is not there."""
    kind, _, head = block.partition(" ")
    words = r"\s*,\s*".join(re.escape(part.strip()) for part in head.split(","))
    opening = rf"\{{%-?\s*{kind}\s+{words}\s*(\(|-?%\}})"
    found = re.search(rf"{opening}.*?\{{%-?\s*end{kind}\s*-?%\}}", source, re.DOTALL)
    if found is None:
        raise LookupError(f"no `{block}` block")
    return found.group(0)


def block_digest(source: str, block: str) -> str:
    """sha256 (hex) of ``block_text(source, block)``."""
    return hashlib.sha256(block_text(source, block).encode()).hexdigest()


def installed(file: str) -> Path:
    """An installed package's file, by its path under site-packages (``dbt/include/...``)."""
    return Path(sysconfig.get_paths()["purelib"]) / file


def overrides() -> list[Override]:
    """Every macro whose properties name an upstream block (``meta.upstream``)."""
    found = []
    for properties in sorted(MACROS.rglob("_*.yml")):
        for macro in yaml.safe_load(properties.read_text()).get("macros", []):
            upstream = (macro.get("meta") or {}).get("upstream")
            if upstream:
                found.append(Override(macro["name"], defining_file(macro["name"]), **upstream))
    return found


def defining_file(name: str) -> Path:
    """The file under ``macros/`` that defines macro ``name`` (a materialization's macro name is
    ``materialization_<name>_<adapter>``)."""
    materialization = re.fullmatch(r"materialization_(\w+?)_(\w+)", name)
    pattern = (
        rf"\{{%-?\s*materialization\s+{materialization[1]}\s*,\s*adapter\s*=\s*'{materialization[2]}'"
        if materialization
        else rf"\{{%-?\s*macro\s+{re.escape(name)}\s*\("
    )
    paths = [path for path in MACROS.rglob("*.sql") if re.search(pattern, path.read_text())]
    if len(paths) != 1:
        raise LookupError(f"macro {name} is defined in {len(paths)} files under macros/: {paths}")
    return paths[0]


def _defined(text: str) -> set[str]:
    """The macros a file defines: macro names, and materializations as ``materialization NAME``."""
    macros = set(re.findall(r"\{%-?\s*macro\s+(\w+)\s*\(", text))
    return macros | {f"materialization {name}" for name in re.findall(r"\{%-?\s*materialization\s+(\w+)\s*,", text)}


def replaced_upstream() -> dict[str, str]:
    """Our macros that replace one that dbt's installed packages (``dbt/include``) define: the same
    macro name, or a materialization of the same name. Returns {our macro name: the block's name}."""
    upstream = set()
    for path in installed("dbt/include").rglob("*.sql"):
        upstream |= _defined(path.read_text())
    ours = {}
    for path in MACROS.rglob("*.sql"):
        text = path.read_text()
        for name in _defined(text) & upstream:
            if name.startswith("materialization "):
                adapter = re.search(rf"\{{%-?\s*materialization\s+{name.split()[1]}\s*,\s*adapter\s*=\s*'(\w+)'", text)[1]
                ours[f"materialization_{name.split()[1]}_{adapter}"] = name
            else:
                ours[name] = name
    return ours
