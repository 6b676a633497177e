#!/usr/bin/env python3
"""Writes a synthetic ~1 GB Kineto trace for the import/replay benchmark by replicating the real
HTA sample (workloads/importers/samples/kineto-hta-nccl-2gpu/rank-0.json.gz, 3 ProfilerSteps)
over and over in time: copy j shifts every timestamp by j x the sample's span and renumbers the
ProfilerSteps and correlation ids, so the file looks like a long profiling run of the same job.

  python3 make_big_trace.py OUT.json [TARGET_BYTES]   (default 1 GiB; OUT is plain JSON)
"""
import gzip
import json
import sys

SAMPLE = "workloads/importers/samples/kineto-hta-nccl-2gpu/rank-0.json.gz"


def main():
    out_path = sys.argv[1]
    target = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 30
    d = json.load(gzip.open(SAMPLE))
    events = d.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + e.get("dur", 0) for e in timed)
    span = t1 - t0 + 1000.0
    lines = []
    copies = 0
    written = 0
    with open(out_path, "w") as out:
        head = json.dumps(d)[:-1]
        out.write(head + ', "traceEvents": [\n')
        first = True
        while written < target:
            shift = copies * span
            for e in events:
                e2 = dict(e)
                if "ts" in e2 and isinstance(e2["ts"], (int, float)):
                    e2["ts"] = e2["ts"] + shift
                name = e2.get("name", "")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    e2["name"] = "ProfilerStep#%d" % (int(name[13:]) + 3 * copies)
                args = e2.get("args")
                if isinstance(args, dict) and ("correlation" in args or "External id" in args):
                    args = dict(args)
                    for k in ("correlation", "External id"):
                        if isinstance(args.get(k), int):
                            args[k] = args[k] + copies * 10_000_000
                    e2["args"] = args
                s = json.dumps(e2)
                out.write(("" if first else ",\n") + s)
                written += len(s) + 2
                first = False
            copies += 1
        out.write("\n]}\n")
    print("%s: %d copies of %d events, %.2f GB, last step ProfilerStep#%d" %
          (out_path, copies, len(events), written / 1e9, 3 * copies + 3))


if __name__ == "__main__":
    main()
