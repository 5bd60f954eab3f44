# wait_for OPERATION_ID: polls the operation until finished_at is set, then shows how it ended.
# Polls back off as the typed client's waitForOperation does: 0.2 s at first (most operations are
# done by then), doubling up to 2 s.
# It returns non-zero, with a message, when the operation did not succeed, when a request fails
# (no operation id, a refused or unanswered poll) or after WAIT_TIMEOUT seconds (default 300).
# Needs API (the organization's base URL) and AUTH (the Authorization header); source it:
#   source scripts/examples/wait-for.sh
wait_for() {
  local op="${1:-}" body deadline=$((SECONDS + ${WAIT_TIMEOUT:-300})) pause=0.2
  case "$op" in ''|null) echo "wait_for: no operation id (did the request before it fail?)" >&2; return 1 ;; esac
  until body=$(curl -sS --fail-with-body -H "$AUTH" "$API/operations/$op") && jq -e '.finished_at != null' <<< "$body" > /dev/null; do
    jq -e .id <<< "${body:-null}" > /dev/null 2>&1 || { echo "wait_for: GET $API/operations/$op failed: ${body:-no answer}" >&2; return 1; }
    [ "$SECONDS" -lt "$deadline" ] || { echo "wait_for: $op still $(jq -r .state <<< "$body") after ${WAIT_TIMEOUT:-300} s" >&2; return 1; }
    sleep "$pause"
    case "$pause" in 0.2) pause=0.4 ;; 0.4) pause=0.8 ;; 0.8) pause=1.6 ;; *) pause=2 ;; esac
  done
  jq -c '{type, state, error_class, error_detail}' <<< "$body"
  jq -e '.state == "succeeded"' <<< "$body" > /dev/null || { echo "wait_for: $op did not succeed" >&2; return 1; }
}
