#!/usr/bin/env bash
# run_expecting.sh REGEX COMMAND...: passes when COMMAND exits with status 0 and what it printed
# matches REGEX (an extended regular expression, matched across lines). A program that prints the
# right lines and then crashes fails, which ctest's PASS_REGULAR_EXPRESSION alone would pass.
set -uo pipefail
regex=$1
shift
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$status" -ne 0 ]; then
  echo "run_expecting: '$*' exited with status $status" >&2
  exit 1
fi
if ! printf '%s' "$output" | grep -Ezq -- "$regex"; then
  echo "run_expecting: the output of '$*' does not match: $regex" >&2
  exit 1
fi
