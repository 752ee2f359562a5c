#!/usr/bin/env bash
# Start/stop a Spark Thrift Server for `dbt build --target thrift` (see `payledger thrift --help`):
#   bash scripts/thrift_server.sh start [--port 10000] [--standalone]
#   bash scripts/thrift_server.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
export PAYLEDGER_HOME="${PAYLEDGER_HOME:-$PWD}"
exec .venv/bin/payledger thrift "$@"
