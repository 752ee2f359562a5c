"""The project's macro files rendered through Jinja alone (no dbt, no Spark), for unit tests of a
macro's logic: dbt's ``return()`` and a macro called as dbt calls one."""

from __future__ import annotations

from typing import Any

import jinja2

from payledger.spark import PROJECT_ROOT


class MacroReturn(Exception):
    """dbt's ``return()``: ends the macro that called it with a value."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


def dbt_return(value: Any) -> None:
    """What a test environment gives its macros as ``return``."""
    raise MacroReturn(value)


def environment() -> jinja2.Environment:
    """A Jinja environment with the ``do`` extension and ``return`` as dbt's; the caller adds the
    rest of dbt's context that its macros use (``var``, ``exceptions``, ...) to ``globals``."""
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    env.globals["return"] = dbt_return
    return env


def macro(env: jinja2.Environment, path: str, name: str) -> Any:
    """The macro ``name`` of ``macros/<path>`` rendered in ``env``, called as dbt calls a macro:
    it returns the value the macro gives ``return()``, or None. Private macros (a leading
    underscore, which a Jinja module does not export) are taken from the template's context."""
    template = env.from_string((PROJECT_ROOT / "macros" / path).read_text())
    context = template.new_context()
    "".join(template.root_render_func(context))
    made = context.vars[name]

    def call(*args: Any) -> Any:
        try:
            made(*args)
        except MacroReturn as returned:
            return returned.value
        return None

    return call
