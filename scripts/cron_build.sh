#!/usr/bin/env bash
# Cron entry point: the scheduled build of the PayLedger balance view.
#   */15 * * * * /path/to/payledger/scripts/cron_build.sh >> /var/log/payledger/build.jsonl 2>&1
# Runs `payledger build` (dbt source freshness, dbt build, then table maintenance of the tables with 24
# or more commits since their last one: PAYLEDGER_MAINTAIN_EVERY, --maintain-every; history kept for
# time travel: PAYLEDGER_RETENTION_HOURS, --retention-hours, default 168) from the project root. The build takes
# an exclusive lock on the warehouse: a run that finds another one running waits --wait seconds
# (default 0), then exits 75 without touching anything. Logs one JSON object per line on stdout.
# Exit codes: 0 ok, 1 freshness or build failed, 75 another build holds the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
export PAYLEDGER_HOME="${PAYLEDGER_HOME:-$PWD}"
exec .venv/bin/payledger build "$@"
