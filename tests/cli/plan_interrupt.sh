#!/bin/sh
# Ctrl-C during `commstack plan` (cli/interrupt.hpp): the search stops, what it has is printed with
# a STOPPED note, and the status is 130. The GPT-3 1024-GPU search runs about a minute, so a SIGINT
# after a few seconds lands in it.
# usage: plan_interrupt.sh path/to/commstack scratch-dir
exe=$1
out=$2/plan-interrupt.out
err=$2/plan-interrupt.err
"$exe" plan --cluster dgx-a100 --nodes 128 --model gpt3-175b --global-batch 1536 >"$out" 2>"$err" &
pid=$!
# The handler is in place once the simulator exists (well under the wait, sanitizer builds too);
# the bounds of this search alone take half a minute.
sleep "${PLAN_INTERRUPT_WAIT:-8}"
kill -INT "$pid"
wait "$pid"
status=$?
if [ "$status" -ne 130 ]; then
  echo "FAIL: exit status $status, expected 130"; cat "$err"; exit 1
fi
grep -q "not simulated: STOPPED before the end" "$out" || { echo "FAIL: no STOPPED note"; cat "$out"; exit 1; }
grep -q "stopped by Ctrl-C" "$err" || { echo "FAIL: no note on stderr"; cat "$err"; exit 1; }
echo ok
