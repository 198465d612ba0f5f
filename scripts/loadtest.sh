#!/usr/bin/env bash
# Vigie dashboard load test: p99 latency of /queue and /account/{id} under 200 concurrent clients, with wrk.
#
#   scripts/loadtest.sh [BASE_URL] [ACCOUNT]
#
# Logs in once through the form (login CSRF token, then the session cookie),
# then runs wrk with that cookie. Environment: VIGIE_USER (rita),
# VIGIE_PASSWORD (demo-password), CONNS (200), THREADS (2), DURATION (20s).
# Against a lake: vigie serve --lake LAKE --addr 127.0.0.1:8088 (and vigie admin add-user rita --role reviewer)
# wrk comes from Debian: apt-get install -y wrk. Only ever point it at a server on this machine.
set -euo pipefail

BASE=${1:-http://127.0.0.1:8088}
ACCOUNT=${2:-}
USER_NAME=${VIGIE_USER:-rita}
PASSWORD=${VIGIE_PASSWORD:-demo-password}
CONNS=${CONNS:-200}
THREADS=${THREADS:-2}
DURATION=${DURATION:-20s}

command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 2; }
jar=$(mktemp)
trap 'rm -f "$jar"' EXIT

token=$(curl -fsS -c "$jar" "$BASE/login" | grep -o 'name="csrf" value="[0-9a-f]*"' | head -1 | sed 's/.*value="//; s/"$//')
curl -fsS -o /dev/null -b "$jar" -c "$jar" \
  --data-urlencode "username=$USER_NAME" --data-urlencode "password=$PASSWORD" \
  --data-urlencode "csrf=$token" --data-urlencode "next=/queue" "$BASE/login"
session=$(awk '$6 == "vigie_session" { print $7 }' "$jar")
[ -n "$session" ] || { echo "login failed for $USER_NAME" >&2; exit 1; }
cookie="Cookie: vigie_session=$session"

if [ -z "$ACCOUNT" ]; then
  ACCOUNT=$(curl -fsS -H "$cookie" "$BASE/queue" | grep -o '/account/[A-Za-z0-9._-]*' | head -1 | cut -d/ -f3)
fi
for path in /queue "/account/$ACCOUNT"; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "$cookie" "$BASE$path")
  [ "$code" = 200 ] || { echo "$path answers $code" >&2; exit 1; }
  echo "== $path ($CONNS connections, $THREADS threads, $DURATION)"
  wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --timeout 10s --latency -H "$cookie" "$BASE$path"
done
