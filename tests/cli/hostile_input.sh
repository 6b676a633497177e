#!/bin/sh
# Hostile inputs, generated here rather than committed (some are hundreds of KB): each CASE writes
# its input under OUTDIR, runs commstack on it and passes when commstack exits with status EXPECTED
# (never a crash: 139, a hang, or memory without bound) and its output (stdout + stderr) matches
# the CASE's pattern. Cases that check an output cannot overwrite an input also check that the
# input is byte-for-byte what it was.
# usage: hostile_input.sh COMMSTACK OUTDIR CASE
set -u
exe=$1; out=$2/hostile-$3; name=$3
rm -rf "$out" && mkdir -p "$out" || exit 1
src=$(pwd)  # the source tree (ctest runs this from it)

# N copies of one character.
repeat() { head -c "$2" /dev/zero | tr '\0' "$1"; }

# A Kineto trace whose ProfilerStep event carries args nested DEPTH arrays deep (and one kernel:
# a step without GPU ops is refused).
kineto_nested() {
  printf '{"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [{"ph": "X", "cat": "user_annotation", '
  printf '"name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 500, "args": {"x": '
  repeat '[' "$1"; repeat ']' "$1"
  printf '}}, {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1020, "dur": 100, '
  printf '"args": {"stream": 7}}]}\n'
}

# Runs commstack, keeps its output in $out/log, checks the status and the pattern.
expect() {
  want=$1; pattern=$2; shift 2
  "$exe" "$@" > "$out/log" 2>&1
  rc=$?
  cat "$out/log" | cut -c1-400
  if [ "$rc" -ne "$want" ]; then echo "FAIL: exit $rc, expected $want"; exit 1; fi
  if ! grep -q -e "$pattern" "$out/log"; then echo "FAIL: output does not match '$pattern'"; exit 1; fi
}

# The input must be unchanged after a refused write.
unchanged() {
  if ! cmp -s "$1" "$2"; then echo "FAIL: $2 was overwritten"; exit 1; fi
}

h100_table=$src/tests/cli/nccl-tests-h100-2x8-no-nvls-synthetic.txt
a100_info=$src/tests/cli/nccl-tests-a100-info-32ch.txt
case $name in
  nccl_log_long_line)  # one NCCL INFO line of 100,000 characters: std::regex used to overflow the stack
    { printf 'h:1:1 [0] NCCL INFO '; repeat x 100000; echo; } > "$out/long.log"
    expect 2 'longer than 4096 characters' replay --cluster dgx-a100 --trace "$out/long.log"
    # The same line inside a usable log is skipped with a warning.
    { cat "$src/tests/cli/nccl-log-gb200-2tray-mnnvl0-synthetic.log"; cat "$out/long.log"; } > "$out/mixed.log"
    expect 0 '1 NCCL INFO line(s) longer than 4096 characters' replay --cluster gb200-nvl72 --trace "$out/mixed.log" ;;
  nccl_tests_long_line)  # nccl-tests output with 100,000-character lines: read, not a crash
    { sed -n 1,4p "$a100_info"; printf 'node:1:1 [0] NCCL INFO '; repeat x 100000; echo; repeat y 100000; echo
      sed -n '5,$p' "$a100_info"; } > "$out/run.txt"
    expect 0 'MAPE' validate --cluster dgx-a100 --nodes 1 --gpus-per-node 8 --measured "$out/run.txt"
    expect 0 'wrote' calibrate --input "$out/run.txt@cluster=dgx-a100,nodes=1,gpus_per_node=8" \
      --output "$out/fit.json" ;;
  kineto_deep_args)  # 100,000 nested arrays: the value copied later recursed once per level
    kineto_nested 100000 > "$out/deep.json"
    expect 2 'deep.json: JSON nested more than 256 levels deep in "traceEvents"\[0\]' \
      replay --cluster dgx-a100 --trace "$out/deep.json"
    kineto_nested 300 > "$out/deep300.json"  # docs/cli.md: every JSON input refuses > 256 levels
    expect 2 'nested more than 256 levels deep' replay --cluster dgx-a100 --trace "$out/deep300.json"
    kineto_nested 200 > "$out/deep200.json"
    expect 0 'replayed' replay --cluster dgx-a100 --trace "$out/deep200.json" ;;
  chakra_deep)  # the same in a Chakra trace, outside the streamed array and in a node
    { printf '{"ngpus": 1, "meta": '; repeat '[' 50000; repeat ']' 50000; printf ', "workload_graph": []}\n'; } \
      > "$out/chakra.0.json"
    expect 2 'chakra.0.json: JSON nested more than 256 levels deep in "meta"' \
      replay --cluster dgx-a100 --trace "$out/chakra.0.json"
    { printf '{"ngpus": 1, "workload_graph": [{"Id": 1, "NodeType": 4, "runtime": 5, "attr": '
      repeat '[' 50000; repeat ']' 50000; printf '}]}\n'; } > "$out/chakra.0.json"
    expect 2 'chakra.0.json: JSON nested more than 256 levels deep in "workload_graph"\[0\]' \
      replay --cluster dgx-a100 --trace "$out/chakra.0.json" ;;
  topo_xml_deep)  # 20,000 nested <pci>: the reader recursed once per level
    { printf '<system version="1"><cpu numaid="0">'
      i=0; while [ $i -lt 20000 ]; do printf '<pci busid="0000:%05x:00.0">' $i; i=$((i + 1)); done
      printf '<gpu dev="0" sm="90"/>'
      i=0; while [ $i -lt 20000 ]; do printf '</pci>'; i=$((i + 1)); done
      printf '</cpu></system>\n'; } > "$out/deep.xml"
    expect 2 'deep.xml:1: <pci>: more than 64 levels of nested <pci>' topo --from-nccl-xml "$out/deep.xml" ;;
  measured_dev_zero)  # an endless input: refused at 256 MiB instead of growing without bound
    expect 2 '/dev/zero: cannot read the measured run: more than 256 MiB' \
      validate --cluster dgx-h100 --measured /dev/zero ;;
  measured_time_not_physical)  # a time of 0, or one no call can take, used to be dropped or give 1e304 %
    for t in 0.0 1e-300 1e300; do
      sed "s/ 420.0  159.78/ $t  159.78/" "$h100_table" > "$out/run.txt"
      expect 2 "run.txt:27: column 'time' (out-of-place): expected a time per call of 0.001 us to 1e+12 us" \
        validate --cluster dgx-h100 --measured "$out/run.txt"
      expect 2 "run.txt:27: column 'time'" calibrate --input "$out/run.txt@cluster=dgx-h100" --output "$out/fit.json"
    done
    sed 's/^1048576  *45.20/1048576 0.00/' "$src/tests/cli/osu-xccl-allreduce-synthetic.txt" > "$out/osu.txt"
    expect 2 "osu.txt:9: column 'Avg Latency(us)' (the time): expected a time per call of 0.001 us" \
      validate --cluster dgx-h100 --nodes 1 --gpus-per-node 8 --measured "$out/osu.txt" ;;
  measured_channel_line)  # "0 coll channels", 999, -5 were skipped and the modelled search's count used
    for v in '0 coll' '999 coll' '-5 coll' '16 coll channels, 0 collnet channels, 99 nvls'; do
      sed "s/ 16 coll channels, 16 collnet channels, 0 nvls/ $v channels, 16 collnet channels, 0 nvls/" \
        "$h100_table" > "$out/run.txt"
      bad=$(echo "$v" | sed 's/.*, //')
      expect 2 "run.txt:23: NCCL's channel line: '$bad channels' is not a channel count NCCL prints; expected" \
        validate --cluster dgx-h100 --measured "$out/run.txt"
    done ;;
  tuning_line_unreadable)  # a TUNING line that cannot be read was skipped without the note docs promise
    tuning=$src/tests/cli/nccl-tests-a100-tuning.txt
    for r in 's/{0\.\.23}/{-5..3}/' 's/{0\.\.23}/{23..0}/' 's/{0\.\.23}/{0..99999}/' \
             's/Algo RING proto SIMPLE/Algo FOO proto SIMPLE/' 's/Algo RING proto SIMPLE/Algo RING proto BAR/'; do
      sed "$r" "$tuning" > "$out/run.txt"
      expect 0 "# note: [12] of NCCL's TUNING lines cannot be read and are not used .*run.txt:8: TUNING line: " \
        validate --cluster dgx-a100 --nodes 1 --gpus-per-node 8 --measured "$out/run.txt"
    done
    sed 's/{0\.\.23}/{0..99999}/' "$tuning" > "$out/run.txt"
    expect 0 'run.txt:8: TUNING line: channel range {0..99999} must satisfy 0 <= lo <= hi <= 63' \
      validate --cluster dgx-a100 --nodes 1 --gpus-per-node 8 --measured "$out/run.txt" ;;
  calibrate_output_is_input)
    cp "$h100_table" "$out/run.txt" && cp "$h100_table" "$out/orig.txt"
    expect 2 "--output $out/./run.txt: the same file as --input $out/run.txt" \
      calibrate --input "$out/run.txt@cluster=dgx-h100" --output "$out/./run.txt"
    unchanged "$out/orig.txt" "$out/run.txt"
    ln -s run.txt "$out/link.txt"
    expect 2 'the same file as --input' calibrate --input "$out/run.txt@cluster=dgx-h100" --output "$out/link.txt"
    unchanged "$out/orig.txt" "$out/run.txt" ;;
  topo_write_cluster_is_input)
    cp "$src/calibration/data/nccl-logs/aws-p5-h100-topo.xml" "$out/node.xml" && cp "$out/node.xml" "$out/orig.xml"
    expect 2 "--write-cluster $out/node.xml: the same file as --from-nccl-xml $out/node.xml" \
      topo --from-nccl-xml "$out/node.xml" --write-cluster "$out/node.xml"
    expect 2 "--dot $out/node.xml: the same file as --from-nccl-xml" \
      topo --from-nccl-xml "$out/node.xml" --dot "$out/node.xml"
    unchanged "$out/orig.xml" "$out/node.xml" ;;
  validate_plot_is_input)  # --plot run.png writes run.dat and run.gp next to it
    cp "$h100_table" "$out/run.dat" && cp "$h100_table" "$out/orig.txt"
    expect 2 "--plot $out/run.png: writes $out/run.dat, the same file as --measured $out/run.dat" \
      validate --cluster dgx-h100 --measured "$out/run.dat" --plot "$out/run.png"
    unchanged "$out/orig.txt" "$out/run.dat" ;;
  replay_outputs_are_input)
    cp -r "$src/workloads/importers/samples/kineto-hta-nccl-2gpu" "$out/trace" && cp -r "$out/trace" "$out/orig"
    expect 2 "--trace-out $out/trace/rank-0.json.gz: a file read from --trace $out/trace" \
      replay --cluster dgx-a100 --trace "$out/trace" --trace-out "$out/trace/rank-0.json.gz"
    expect 2 "--otf2 $out/trace: the same file as --trace $out/trace" \
      replay --cluster dgx-a100 --trace "$out/trace" --otf2 "$out/trace"
    unchanged "$out/orig/rank-0.json.gz" "$out/trace/rank-0.json.gz"
    cp "$src/tests/cli/cluster-h100-4to1-tor.json" "$out/cluster.json"
    expect 2 "--trace $out/cluster.json: the same file as --cluster $out/cluster.json" \
      collective --cluster "$out/cluster.json" --profile none -e 1M --trace "$out/cluster.json" ;;
  control_chars_in_value)
    # A newline or an escape sequence in a value is written out: the error stays one line.
    expect 2 "unknown 'fu\\\\nll\\\\x1b\\[31m'; expected" train --cluster dgx-h100 --nodes 1 --model llama3-8b --dp 8 \
      --global-batch 8 --recompute "$(printf 'fu\nll\033[31m')"
    if [ "$(wc -l < "$out/log")" -ne 1 ]; then echo "FAIL: the error is not one line"; exit 1; fi ;;
  *) echo "unknown case $name"; exit 1 ;;
esac
echo "ok: $name"
