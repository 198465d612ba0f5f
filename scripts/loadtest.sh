#!/usr/bin/env bash
# Vigie dashboard load test: p99 latency of /queue, /account/{id} and /game/{id} under 200 concurrent clients, with wrk.
#
#   scripts/loadtest.sh [BASE_URL] [ACCOUNT] [GAME]
#
# ACCOUNT defaults to the first account of the queue, GAME to the first game linked from that account's page.
#
# A mix of pages instead of three: GATHER=FILE writes every account of the queue (all its pages,
# status=all) and the first two games linked from each account's page to FILE, one path per line,
# and exits; MIX=FILE then runs wrk once with every request drawn at random from FILE
# (scripts/loadtest_mix.lua). Restart the server between the two so that no page is kept.
#
# Logs in once through the form (login CSRF token, then the session cookie),
# then runs wrk with that cookie. Environment: VIGIE_USER (rita),
# VIGIE_PASSWORD (demo-password), CONNS (200), THREADS (2), DURATION (20s).
# Against a lake: vigie serve --lake LAKE --addr 127.0.0.1:8088 (and vigie admin add-user rita --role reviewer)
# wrk comes from Debian: apt-get install -y wrk. Only ever point it at a server on this machine.
set -euo pipefail

BASE=${1:-http://127.0.0.1:8088}
ACCOUNT=${2:-}
GAME=${3:-}
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

if [ -n "${GATHER:-}" ]; then
  : >"$GATHER"
  n=1
  while :; do
    page=$(curl -fsS -H "$cookie" "$BASE/queue?status=all&page=$n")
    accounts=$(grep -o '/account/[A-Za-z0-9._-]*' <<<"$page" | sort -u || true)
    [ -n "$accounts" ] || break
    if grep -qxF "$(sed -n 1p <<<"$accounts")" "$GATHER"; then break; fi
    for a in $accounts; do
      echo "$a" >>"$GATHER"
      acc_page=$(curl -fsS -H "$cookie" "$BASE$a")
      grep -o '/game/[A-Za-z0-9._-]*' <<<"$acc_page" | awk '!seen[$0]++' | sed -n 1,2p >>"$GATHER" || true
    done
    n=$((n + 1))
  done
  echo "$(wc -l <"$GATHER") paths in $GATHER"
  exit 0
fi
if [ -n "${MIX:-}" ]; then
  echo "== mix of $(wc -l <"$MIX") pages ($CONNS connections, $THREADS threads, $DURATION)"
  PATHS="$MIX" COOKIE="vigie_session=$session" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --timeout 10s --latency \
    -s "$(dirname "$0")/loadtest_mix.lua" "$BASE"
  exit 0
fi
if [ -z "$ACCOUNT" ]; then
  ACCOUNT=$(curl -fsS -H "$cookie" "$BASE/queue" | grep -o '/account/[A-Za-z0-9._-]*' | head -1 | cut -d/ -f3)
fi
if [ -z "$GAME" ]; then
  page=$(curl -fsS -H "$cookie" "$BASE/account/$ACCOUNT")
  GAME=$(grep -o '/game/[A-Za-z0-9._-]*' <<<"$page" | sed -n 1p | cut -d/ -f3)
fi
for path in /queue "/account/$ACCOUNT" "/game/$GAME"; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "$cookie" "$BASE$path")
  [ "$code" = 200 ] || { echo "$path answers $code" >&2; exit 1; }
  echo "== $path ($CONNS connections, $THREADS threads, $DURATION)"
  wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --timeout 10s --latency -H "$cookie" "$BASE$path"
done
