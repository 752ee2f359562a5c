#!/usr/bin/env bash
# Installs what pip cannot: Maven with a Java runtime (fetches the jars of pom.xml from Maven
# Central; Spark runs on the Java 25 of requirements.txt), headless Chromium with its WebDriver (the
# docs browser test) and wrk (the HTTP load generator of make bench-serve).
# Idempotent; needs root (or sudo) only when something is missing.
set -euo pipefail
missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install_system_packages: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
# Without the packages Debian only recommends: for chromium, its driver and wrk, 85 of the 119
# packages on a fresh Debian 12 machine (Samba and CUPS clients, udev, Perl's web modules), none of
# which headless Chromium with --no-sandbox (the docs test) uses; its fonts are dependencies.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
