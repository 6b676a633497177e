#!/usr/bin/env python3
"""Korthikanti et al. (arXiv:2205.05198) Table 4: forward and backward time of ONE transformer layer of
the 22B model (h 6144, 64 heads, TP 8, seq 2048, micro-batch 4) on an A100 DGX, for five
recomputation / sequence-parallel settings, predicted by `commstack train` from its Perfetto trace.

Nothing is fitted here: the compute profile is the one fitted on Megatron SC'21 Table 1 rows 1-3
(results/megatron-sc21-table1/a100-fitted.json). Per-layer time = start of the next layer's first op
minus start of this layer's first op on rank 0 (forward: layer 1 -> 2; backward, which runs the layers
in reverse and includes their recomputation: layer 2 -> 1), so the blocking TP collectives are in it.
The model is korthikanti-22b cut to 4 layers (korthikanti-22b-4layers.json) so that the
no-recomputation baseline fits in 80 GB; a layer's time does not depend on the layer count.

usage: table4_per_layer.py [path/to/commstack]   (run from the repository root)
"""
import csv, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXE = sys.argv[1] if len(sys.argv) > 1 else "build/commstack"
CSV = "workloads/reference/training_korthikanti_table4_per-layer-22B.csv"
PROFILE = "results/megatron-sc21-table1/a100-fitted.json"
MODEL = os.path.join(HERE, "korthikanti-22b-4layers.json")
VARIANTS = {"Baseline (no recompute)": ("none", False), "Sequence Parallelism only": ("none", True),
            "Full recompute": ("full", False), "Selective Recompute only": ("selective", False),
            "Selective + Sequence": ("selective", True)}


def layer_times(recompute, sp):
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        cmd = [EXE, "train", "--cluster", "dgx-a100", "--nodes", "1", "--model", MODEL, "--tp", "8", "--global-batch",
               "4", "--micro-batch", "4", "--recompute", recompute, "--attention", "materialized", "--compute-profile",
               PROFILE, "--trace", trace, "--format", "json"]
        if sp:
            cmd.append("--sequence-parallel")
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        events = json.load(open(trace))["traceEvents"]
    start = {}
    for e in events:
        if e.get("ph") != "X" or e["pid"] != 0 or e["args"]["layer"] < 0:
            continue
        key = ("fwd" if e["args"]["phase"] == "forward" else "bwd", e["args"]["layer"])
        start[key] = min(start.get(key, float("inf")), e["ts"])
    fwd = (start[("fwd", 2)] - start[("fwd", 1)]) / 1e3  # trace times are microseconds
    bwd = (start[("bwd", 1)] - start[("bwd", 2)]) / 1e3
    # The recorded command has repository-relative paths and a fixed trace name, so the result file
    # is the same on every checkout and run.
    root = os.path.dirname(os.path.dirname(HERE))
    shown = [os.path.relpath(a, root) if a == MODEL else "trace.json" if a == trace else a for a in cmd[1:]]
    return fwd, bwd, " ".join(shown)


def main():
    with open(CSV) as f:
        rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    table = []
    for r in rows:
        fwd, bwd, cmd = layer_times(*VARIANTS[r["experiment"]])
        mf, mb = float(r["forward_ms"]), float(r["backward_ms"])
        table.append(dict(experiment=r["experiment"], measured_fwd_ms=mf, predicted_fwd_ms=round(fwd, 2),
                          fwd_error_pct=round(100 * (fwd / mf - 1), 1), measured_bwd_ms=mb, predicted_bwd_ms=round(bwd, 2),
                          bwd_error_pct=round(100 * (bwd / mb - 1), 1), measured_total_ms=float(r["combined_ms"]),
                          predicted_total_ms=round(fwd + bwd, 2),
                          total_error_pct=round(100 * ((fwd + bwd) / float(r["combined_ms"]) - 1), 1), command=cmd))
    with open(os.path.join(HERE, "table4-results.json"), "w") as f:
        json.dump({"compute_profile": PROFILE, "rows": table}, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "table4-results.md"), "w") as f:
        f.write(f"Korthikanti Table 4 (22B, one layer, TP 8, micro-batch 4); compute profile {PROFILE} "
                "(fitted on Megatron SC'21 Table 1 rows 1-3; nothing fitted here)\n\n")
        f.write("| experiment | fwd measured ms | fwd predicted | error % | bwd measured ms | bwd predicted | error % | "
                "total measured | total predicted | error % |\n|" + "---|" * 10 + "\n")
        for t in table:
            f.write(f"| {t['experiment']} | {t['measured_fwd_ms']} | {t['predicted_fwd_ms']} | {t['fwd_error_pct']} | "
                    f"{t['measured_bwd_ms']} | {t['predicted_bwd_ms']} | {t['bwd_error_pct']} | {t['measured_total_ms']} | "
                    f"{t['predicted_total_ms']} | {t['total_error_pct']} |\n")
    print(open(os.path.join(HERE, "table4-results.md")).read())


if __name__ == "__main__":
    main()
