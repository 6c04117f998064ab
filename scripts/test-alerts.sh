#!/usr/bin/env bash
# The Prometheus alerting rules the package ships (packaging/prometheus/launchguard-alerts.yml):
# `promtool check rules` (syntax, templates) and `promtool test rules` on
# packaging/prometheus/launchguard-alerts.test.yml (each alert fires on its failure and stays silent
# on the healthy and borderline cases). That the rules name metrics the agent really writes is a unit
# test of node-agent/src/metrics.rs.
#
# promtool comes from Debian's `prometheus` package. When it is not on PATH, only promtool is taken
# from that package (apt-get download, dpkg-deb -x into /var/cache/launchguard/promtool): installing
# the package would also start a Prometheus server on port 9090 on the test machine.
# Prints one `test result:` line in cargo's format, which scripts/test.sh counts.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$ROOT/packaging/prometheus
CACHE=/var/cache/launchguard/promtool

promtool_path() {
  if command -v promtool >/dev/null; then command -v promtool; return; fi
  if [ ! -x "$CACHE/usr/bin/promtool" ]; then
    local tmp
    tmp=$(mktemp -d)
    ( cd "$tmp" && { apt_get download prometheus 2>/dev/null || { apt_get update && apt_get download prometheus; }; } ) ||
      { echo "test-alerts: could not download Debian's prometheus package (for promtool)" >&2; rm -rf "$tmp"; return 1; }
    mkdir -p "$CACHE.tmp"
    dpkg-deb -x "$tmp"/prometheus_*.deb "$CACHE.tmp"
    rm -rf "$tmp" "$CACHE"
    mv "$CACHE.tmp" "$CACHE"
  fi
  echo "$CACHE/usr/bin/promtool"
}

PROMTOOL=$(promtool_path)
echo "test-alerts: $("$PROMTOOL" --version 2>&1 | head -n 1)" >&2
PASS=0 FAIL=0
for cmd in "check rules launchguard-alerts.yml" "test rules launchguard-alerts.test.yml"; do
  # shellcheck disable=SC2086 # the words of $cmd are promtool's arguments
  if (cd "$DIR" && "$PROMTOOL" $cmd) >&2; then
    PASS=$((PASS + 1)); echo "test-alerts: ok: promtool $cmd" >&2
  else
    FAIL=$((FAIL + 1)); echo "test-alerts: FAILED: promtool $cmd (in packaging/prometheus)" >&2
  fi
done
status=ok
[ "$FAIL" = 0 ] || status=FAILED
echo "test result: $status. $PASS passed; $FAIL failed; (scripts/test-alerts.sh)"
[ "$FAIL" = 0 ]
