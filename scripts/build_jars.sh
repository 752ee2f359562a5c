#!/usr/bin/env bash
# Builds the Iceberg runtime for the embedded Spark into jars/ (idempotent).
#
# The PyPI package snowpark-connect-deps-iceberg ships iceberg-spark-runtime-3.5_2.12-1.10.2.jar with its
# shaded Jackson classes stripped. We rebuild them from pyspark's own jackson jars, relocated with
# Debian's jarjar (com.fasterxml.jackson.** -> org.apache.iceberg.shaded.com.fasterxml.jackson.@1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv_python="$root/.venv/bin/python"
out="$root/jars"
jarjar=/usr/share/java/jarjar.jar

site=$("$venv_python" -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')
iceberg_dir=$("$venv_python" -c 'import snowpark_connect_deps_iceberg, os; print(os.path.join(os.path.dirname(snowpark_connect_deps_iceberg.__file__), "jars"))')
runtime="$iceberg_dir/iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
shaded="$out/iceberg-shaded-jackson-2.15.2.jar"

[ -f "$runtime" ] || { echo "build_jars: $runtime not found (is snowpark-connect-deps-iceberg installed?)" >&2; exit 1; }
[ -f "$jarjar" ] || { echo "build_jars: $jarjar not found (apt-get install libjarjar-java)" >&2; exit 1; }
mkdir -p "$out"
cp -f "$runtime" "$out/"

if [ ! -s "$shaded" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir "$work/classes"
    for name in jackson-core jackson-databind jackson-annotations; do
        "$venv_python" -m zipfile -e "$site/jars/$name-2.15.2.jar" "$work/classes"
    done
    # Signatures and multi-release duplicates would not match the relocated classes.
    rm -rf "$work/classes/META-INF/versions" "$work/classes"/META-INF/*.SF "$work/classes"/META-INF/*.RSA
    (cd "$work/classes" && "$venv_python" -m zipfile -c "$work/merged.jar" ./*)
    echo 'rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1' > "$work/rules.txt"
    java -jar "$jarjar" process "$work/rules.txt" "$work/merged.jar" "$shaded.tmp"
    mv "$shaded.tmp" "$shaded"
fi
echo "build_jars: $(ls "$out" | tr '\n' ' ')"
