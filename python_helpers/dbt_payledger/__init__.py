"""The PayLedger project's dbt plugin. dbt-core finds it by its module name (``dbt_*``, with a
``plugins`` list: ``dbt.plugins.manager.PluginManager.from_modules``) and starts it each time it
loads a project. For the ``payledger`` project it gives a ``dbt`` command run by hand, or by a
scheduler, the stored state that the ``payledger`` commands pass to dbt
(``payledger.dbt.prepare_command_line_invocation``). dbt-core marks the plugin interface
experimental; ``tests/unit/test_upstream.py`` checks that this dbt-core finds the plugin and
calls it where this module expects."""

from dbt.plugins.manager import dbtPlugin

#: sha256 of the dbt-core 1.11.16 and dbt-common 1.39.0 functions this plugin depends on (their
#: source text, as ``tests/upstream.py``'s ``function_digest`` reads it): ``requires.project``
#: starts the plugins after the profile is in the click context's ``obj`` and before the manifest
#: is parsed; ``from_modules`` and ``get_prefixed_modules`` find them among the top-level ``dbt_*``
#: modules; ``dbtPlugin.__init__`` calls ``initialize``; ``requires.preflight`` copies the
#: environment into the invocation's context before that, and both ``env_var`` read that copy,
#: which ``try_get_invocation_context`` returns and ``InvocationContext.env`` gives as a plain dict
#: (``__init__``, outside Windows) that ``payledger.dbt._pass_to_dbt_env_var`` writes into.
UPSTREAM_SHA256 = {
    ("dbt/cli/requires.py", "preflight"): "374e173e82763edb0a9dc7c977616044778ded47d118a68be6c6626cf54ae0b9",
    ("dbt/cli/requires.py", "project"): "1d996ee23a0f588a7d131b4fdb7bd075cc7aa788424b05f20560a528851a82f7",
    ("dbt/context/base.py", "BaseContext.env_var"): "a07ad3fb7a80a73a31b42b16145feb1586b1a849ffcad124f4bd915638c3ad23",
    ("dbt/context/providers.py", "ProviderContext.env_var"): "478bf851092d2a8040dfeb0b258f3c63639ae9a741865f16de485ab9cecd1353",
    ("dbt/plugins/manager.py", "PluginManager.from_modules"): "20636043b6cc47e32b2f40c2d90a582babe5cdac6d9fc8ef147be7c69c91e1cd",
    ("dbt/plugins/manager.py", "PluginManager.get_prefixed_modules"): "59526daa9caa0a58003adfb733c62f5920c80c1f888b81857df4c476888c4536",
    ("dbt/plugins/manager.py", "dbtPlugin.__init__"): "eaf11eb52e138215f4311b10c4ea54e45c070a11b6ce43ece914f5c7f90b0781",
    ("dbt_common/context.py", "InvocationContext.__init__"): "bbf63bd04685fa45df6088125a75a60656460302871180d7209eac0fc331adb0",
    ("dbt_common/context.py", "InvocationContext.env"): "0f2e63a6923a58b84b948090c0fa684f5458f6cbc83ee9f86c58a7509b48c65f",
    ("dbt_common/context.py", "try_get_invocation_context"): "f6f082407c0d0159410bdf1895d5ea11c984f1a1e6366577f52eb683c9f95e3b",
}


class PayLedgerStoredState(dbtPlugin):
    """Prepares each invocation on the ``payledger`` project as dbt loads it (``initialize``); it
    adds no nodes and no artifacts."""

    def initialize(self) -> None:
        from payledger.dbt import prepare_command_line_invocation

        prepare_command_line_invocation(self.project_name)


plugins = [PayLedgerStoredState]
