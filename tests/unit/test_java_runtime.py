"""The ``.pth`` line that points ``JAVA_HOME`` at the bundled Java runtime
(``payledger.java_runtime``)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

from payledger.java_runtime import HOOK_NAME, bundled_java_home, hook_line


def _java_home_after(line: str, env: dict[str, str]) -> str:
    code = f"{line.strip()}\nprint(os.environ['JAVA_HOME'])"
    return subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_the_hook_sets_java_home_to_the_runtime_unless_payledger_java_home_is_set(tmp_path):
    runtime = tmp_path / "runtime with a space"
    line = hook_line(runtime)
    assert line.startswith("import ")  # site runs only .pth lines that begin with import
    env = {key: value for key, value in os.environ.items() if key != "PAYLEDGER_JAVA_HOME"}
    assert _java_home_after(line, {**env, "JAVA_HOME": "/usr/lib/jvm/other"}) == str(runtime)
    assert _java_home_after(line, {**env, "PAYLEDGER_JAVA_HOME": "/opt/java17"}) == "/opt/java17"


def test_setup_installed_the_hook_in_this_venv():
    hooks = [Path(folder) / HOOK_NAME for folder in site.getsitepackages() if (Path(folder) / HOOK_NAME).is_file()]
    assert hooks, f"make setup wrote no {HOOK_NAME}"
    assert hooks[0].read_text() == hook_line(bundled_java_home())
    assert (bundled_java_home() / "bin" / "java").is_file()
    # This interpreter ran the hook as it started.
    assert os.environ["JAVA_HOME"] == (os.environ.get("PAYLEDGER_JAVA_HOME") or str(bundled_java_home()))
