"""dbt context names that sqlfluff's jinja templater does not provide (`.sqlfluff`: library_path).

`execute` is False, as while dbt parses a project: the macros then skip their run_query branches and
render the SQL they would send, with placeholder literals instead of values read from tables.
Jinja does not export macros whose names start with `_` (the project's private helpers), so they are
loaded here from macros/ and exposed under their own names.
"""

import datetime
import itertools
import re
import sys
import types
from pathlib import Path

import jinja2
import yaml

execute = False
invocation_id = "00000000-0000-0000-0000-000000000000"
run_started_at = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
target = types.SimpleNamespace(name="delta", type="spark", schema="payledger")
modules = types.SimpleNamespace(datetime=datetime, re=re, itertools=itertools)
#: The project's root (this package is scripts/sqlfluff_dbt_stubs/).
_ROOT = Path(__file__).resolve().parents[2]


class _Namespace:
    """Any attribute is a callable returning an empty string (exceptions.*, adapter.*)."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: ""


exceptions = _Namespace()
adapter = _Namespace()


class _Context:
    """dbt's `context` (the macros by name): any macro is a callable returning an empty string, so
    format_variant renders while linting without choosing a format."""

    def get(self, name, default=None):
        return lambda *args, **kwargs: ""


context = _Context()
#: The project's vars whose values are plain YAML (not Jinja that dbt renders per target).
_PROJECT_VARS = {
    name: value for name, value in yaml.safe_load((_ROOT / "dbt_project.yml").read_text())["vars"].items() if not (isinstance(value, str) and "{" in value)
}


def run_query(sql):
    """Never called while execute is False; present so that the name is defined."""
    return None


def var(name, default=None):
    """No --vars while linting: every var has its value in dbt_project.yml when that is plain YAML
    (the list of formats), else its default (a normal build, not a replay)."""
    return _PROJECT_VARS.get(name, default)


def log(message, info=False):
    return ""


def _private_macros():
    """The private macros, in an environment of their own whose globals also hold the public macros
    they call (money_type, ...) and this module's stubs."""
    environment = jinja2.Environment(extensions=["jinja2.ext.do"])
    macros = _ROOT / "macros"
    environment.globals.update({name: value for name, value in globals().items() if not name.startswith("_")})
    for path in sorted(macros.rglob("[!_]*.sql")):
        if not re.search(r"{%-?\s*materialization\s", text := path.read_text()):  # dbt's own tag
            module = environment.from_string(text).module
            environment.globals.update({name: getattr(module, name) for name in re.findall(r"macro\s+([a-z]\w*)\s*\(", text)})
    found = {}
    for path in sorted(macros.rglob("_*.sql")):
        text = path.read_text()
        names = re.findall(r"macro\s+(_\w+)\s*\(", text)
        for name in names:
            text = re.sub(rf"macro\s+{name}\s*\(", f"macro exported{name}(", text)
        module = environment.from_string(text).module
        for name in names:
            found[name] = getattr(module, f"exported{name}")
    return found


# sqlfluff executes this module again for every file it templates (a new module object each time:
# its `_extract_libraries_from_config`), and compiling the macros took about 0.8 s per file, 52 of
# `sqlfluff lint`'s 88 s. The compiled macros are kept for the process in a module of their own in
# sys.modules, keyed by the paths and modification times of what they were compiled from: the
# macro files, and dbt_project.yml, whose vars the stubs in their environment (`var`) answer.
_cache = sys.modules.setdefault("payledger_sqlfluff_stub_cache", types.ModuleType("payledger_sqlfluff_stub_cache"))
_sources = [*sorted((_ROOT / "macros").rglob("*.sql")), _ROOT / "dbt_project.yml"]
_key = tuple((str(path), path.stat().st_mtime_ns) for path in _sources)
if getattr(_cache, "key", None) != _key:
    _cache.key, _cache.macros = _key, _private_macros()
globals().update(_cache.macros)
