"""Drift checks on the dbt and dbt-spark code this project overrides (``tests/upstream.py``): an
upgrade that changes an overridden block fails here, naming our file to review."""

from __future__ import annotations

import pytest

from dbt_payledger import UPSTREAM_SHA256, PayLedgerStoredState
from tests.upstream import ROOT, block_digest, block_text, function_digest, installed, overrides, replaced_upstream

OVERRIDES = overrides()


def test_every_macro_that_replaces_one_of_dbts_says_what_it_was_written_against():
    """A macro of ours with the name of one in dbt's installed packages (or a materialization
    of the same name) replaces it: it must carry ``meta.upstream``, and nothing else does."""
    replacing = replaced_upstream()
    assert replacing, "no override found: the scan of dbt/include or of macros/ is broken"
    assert {o.name for o in OVERRIDES} == set(replacing), (sorted(replacing), [o.name for o in OVERRIDES])
    for override in OVERRIDES:
        assert override.block.split(",")[0].replace("macro ", "") == replacing[override.name], override


@pytest.mark.parametrize("override", OVERRIDES, ids=[o.name for o in OVERRIDES])
def test_the_upstream_block_is_the_one_the_override_was_written_against(override):
    source, ours = installed(override.file), override.path.relative_to(ROOT)
    assert source.is_file(), f"upstream changed: review {ours} ({override.file} is gone)"
    assert block_digest(source.read_text(), override.block) == override.sha256, (
        f"upstream changed: review {ours} ({override.package}'s `{override.block}` in {override.file} differs from the block it was written against)"
    )


def test_a_changed_block_is_noticed_and_a_missing_one_named():
    """The check sees a one-character change inside the block, ignores text around it, and a
    missing block raises rather than hashing nothing."""
    override = next(o for o in OVERRIDES if o.block.startswith("macro "))
    text = installed(override.file).read_text()
    block = block_text(text, override.block)
    assert block_digest("-- a comment before\n" + text + "\n-- and after", override.block) == override.sha256
    changed = text.replace(block, block.replace("%}", "%} ", 1))
    assert block_digest(changed, override.block) != override.sha256
    with pytest.raises(LookupError, match="no `macro no_such_macro` block"):
        block_text(text, "macro no_such_macro")


def test_the_session_cursor_execute_is_the_one_run_dbt_replaces():
    """``payledger.dbt`` replaces dbt-spark's ``Cursor.execute`` in its processes (the profile's
    settings applied once per invocation): the installed method's source must be the one it was
    written against. Read from the file, not the class, which run_dbt may have patched."""
    from payledger.dbt import UPSTREAM_CURSOR_EXECUTE_SHA256

    digest = function_digest("dbt/adapters/spark/session.py", "Cursor.execute")
    assert digest == UPSTREAM_CURSOR_EXECUTE_SHA256, "upstream changed: review _execute_applying_settings_once in python_helpers/payledger/dbt.py"


@pytest.mark.parametrize("function", list(UPSTREAM_SHA256), ids=lambda f: f[1])
def test_dbt_starts_the_projects_plugin_as_the_plugin_was_written_against(function):
    """dbt-core's plugin interface is experimental: the dbt-core functions that find and start the
    project's plugin (``dbt_payledger``), and the dbt-common ones whose environment it writes into,
    must be the ones it was written against."""
    assert function_digest(*function) == UPSTREAM_SHA256[function], f"upstream changed: review python_helpers/dbt_payledger ({function})"


def test_dbt_finds_the_projects_plugin_in_this_install():
    """``make setup`` installs python_helpers so that dbt's search of the top-level ``dbt_*``
    modules finds the plugin (an editable install through an import hook would hide it)."""
    from dbt.plugins.manager import PluginManager

    manager = PluginManager.from_modules("another_project")
    assert any(isinstance(plugin, PayLedgerStoredState) for plugin in manager._plugins)
