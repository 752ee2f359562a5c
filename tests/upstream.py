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

import ast
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
    files = project_macros()
    found = []
    for properties in sorted(MACROS.rglob("_*.yml")):
        for macro in yaml.safe_load(properties.read_text()).get("macros", []):
            upstream = (macro.get("meta") or {}).get("upstream")
            if upstream:
                found.append(Override(macro["name"], files[macro["name"]][0], **upstream))
    return found


def _defined(text: str) -> dict[str, str]:
    """The macros a file defines, as {dbt's macro name: the block's name}: a macro is both
    ``NAME``; a materialization is ``materialization_NAME_ADAPTER`` (``default`` when it names no
    adapter) and ``materialization NAME``."""
    found = {name: name for name in re.findall(r"\{%-?\s*macro\s+(\w+)\s*\(", text)}
    for name, adapter, plain in re.findall(r"\{%-?\s*materialization\s+(\w+)\s*,\s*(?:adapter\s*=\s*'(\w+)'|(\w+))", text):
        found[f"materialization_{name}_{adapter or plain}"] = f"materialization {name}"
    return found


def project_macros() -> dict[str, tuple[Path, str]]:
    """The macros defined under ``macros/``: {dbt's macro name: (its file, the block's name)}.
    Raises ``LookupError`` for a name defined in two files."""
    found: dict[str, tuple[Path, str]] = {}
    for path in sorted(MACROS.rglob("*.sql")):
        for name, block in _defined(path.read_text()).items():
            if name in found:
                raise LookupError(f"macro {name} is defined in {found[name][0]} and {path}")
            found[name] = (path, block)
    return found


def replaced_upstream() -> dict[str, str]:
    """Our macros that replace one that dbt's installed packages (``dbt/include``) define: the same
    macro name, or a materialization of the same name. Returns {our macro name: the block's name}."""
    upstream = set()
    for path in installed("dbt/include").rglob("*.sql"):
        upstream |= set(_defined(path.read_text()).values())
    return {name: block for name, (_, block) in project_macros().items() if block in upstream}


def function_digest(file: str, name: str) -> str:
    """sha256 of the source text of the function ``name`` (``Class.method`` for a method) in the
    installed ``file`` (a path under site-packages); ``LookupError`` when it has none."""
    source = installed(file).read_text()
    body = ast.parse(source).body
    for part in name.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name == part), None)
        if node is None:
            raise LookupError(f"no `{name}` in {file}")
        body = node.body
    return hashlib.sha256(ast.get_source_segment(source, node).encode()).hexdigest()
