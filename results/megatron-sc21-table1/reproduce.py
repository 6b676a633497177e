#!/usr/bin/env python3
"""Megatron-LM SC'21 Table 1 (weak scaling on Selene) predicted by `commstack train`.

Config per row from the paper's own launch script, NVIDIA/Megatron-LM examples/sc21/run_table_1.sh:
TP, PP, micro-batch, global batch, full recomputation (--recompute-method uniform), and the interleaved
schedule where the script passes --num-layers-per-virtual-pipeline-stage (76B: 5, 145B: 5, 310B: 3,
530B: 1 layers per chunk, i.e. 3, 2, 2, 3 chunks per stage); the other rows run 1F1B. The attention
core is Megatron-LM 2021's materialized one (`--attention materialized`: the seq^2 scores go through HBM).

One calibration for the whole table, two parameters of the A100 compute profile:
  x = GEMM efficiency: fraction of the 312 TFLOP/s BF16 peak the tensor-core GEMMs reach (also used for
      the two batched attention GEMMs); FITTED on rows FIT_ROWS (default 1-3, least squares on the
      relative TFLOP/s error); the other rows are out of sample;
  y = HBM efficiency: fraction of the 2039 GB/s datasheet bandwidth the memory-bound kernels reach
      (LayerNorm, bias-GeLU, bias-dropout-add, softmax, dropout; the memory side of every roofline).
      FITTED together with x on the same rows by default (y = 0.667, 1.36 TB/s: these kernels read
      and write, with masks, below the 1.80 TB/s streaming-read ceiling of an A100-80GB SXM measured
      with Nsight Compute, NVIDIA developer forum t/339083). FIT_MEMORY=0 fixes y at that ceiling,
      0.88 (results-hbm-0.88.md: the small rows then blame the GEMMs for the memory-bound time and
      the large rows come out 5-10% slow).
A leave-one-out column refits x (and y unless FIT_MEMORY=0) on the 9 other rows for each row.
The fit uses T(x, y) = C/x + M/y + R per row from simulator runs around the optimum (two runs at the
fixed y, three when y is fitted; exact for ops that are purely compute- or memory-bound, an
approximation for the few roofline ops that switch side). The reported predictions are real simulator runs at the fitted
(x, y); the LOO column uses the interpolation.

usage: reproduce.py [path/to/commstack]   (run from the repository root)
env:   FIT_ROWS=1,2,3 (rows the fit sees), FIT_MEMORY=0 (HBM efficiency fixed at the measured 0.88 instead of fitted),
       REUSE=1 (reuse the interpolation runs saved in fit-points.json)
"""
import csv, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from efficiency_fit import grid_fit, interpolate  # noqa: E402
EXE = sys.argv[1] if len(sys.argv) > 1 else "build/commstack"
CSV = "workloads/reference/training_megatron-sc21_weak-scaling_table1.csv"
MODEL = {"1.7": "megatron-1.7b", "3.6": "megatron-3.6b", "7.5": "megatron-7.5b", "18.4": "megatron-18.4b",
         "39.1": "megatron-39.1b", "76.1": "megatron-76.1b", "145.6": "megatron-145.6b", "310.1": "megatron-310.1b",
         "529.6": "megatron-529.6b", "1008.0": "megatron-1008b"}
FIT_ROWS = [int(i) - 1 for i in os.environ.get("FIT_ROWS", "1,2,3").split(",")]
# Model chunks per pipeline stage: layers / PP / --num-layers-per-virtual-pipeline-stage of
# examples/sc21/run_table_1.sh (1 where the script does not pass it: 1F1B).
VIRTUAL_STAGES = {"76.1": 3, "145.6": 2, "310.1": 2, "529.6": 3}
# The three (x, y) points each row is simulated at for the interpolation.
X0, X1, Y0, Y1 = 0.6, 0.75, 0.75, 0.95
HBM_EFFICIENCY = 0.88  # measured streaming bandwidth / datasheet, see above
FIT_MEMORY = os.environ.get("FIT_MEMORY", "1") == "1"


def rows():
    with open(CSV) as f:
        lines = [l for l in f if not l.startswith("#")]
    out = []
    for r in csv.DictReader(lines):
        gpus, tp, pp = int(r["num_gpus"]), int(r["tensor_parallel"]), int(r["pipeline_parallel"])
        out.append(dict(model=MODEL[r["params_billion"]], params=r["params_billion"], gpus=gpus, tp=tp, pp=pp,
                        dp=gpus // (tp * pp), gbs=int(r["global_batch_size"]), mb=int(r["micro_batch_bigscience_note"]),
                        vs=VIRTUAL_STAGES.get(r["params_billion"], 1), measured=float(r["achieved_tflops_per_gpu"])))
    return out


def profile(x, y, path):
    fit = ", ".join(str(i + 1) for i in FIT_ROWS)
    with open(path, "w") as f:
        json.dump({"name": f"a100-80gb-fitted",
                   "provenance": "A100 SXM4 80GB datasheet peaks (312 TFLOP/s BF16, 2039 GB/s HBM2e, 80 GB); GEMM "
                                 f"efficiency (gemm, attention) {'and HBM efficiency (memory) ' if FIT_MEMORY else ''}"
                                 f"fitted to Megatron SC'21 Table 1 rows {fit} (Selene, Megatron-LM 2021: materialized "
                                 "attention, fused elementwise kernels); "
                                 f"{'' if FIT_MEMORY else 'HBM efficiency 0.88 = measured 1.80 of 2.04 TB/s (NVIDIA developer forum t/339083); '}"
                                 "results/megatron-sc21-table1",
                   "peak_bf16_flops": 312e12, "hbm_bytes_per_s": 2039e9, "memory_bytes": 80e9,
                   "efficiency": {"gemm": round(x, 4), "attention": round(x, 4), "memory": round(y, 4)}}, f, indent=2)
        f.write("\n")


def run(row, prof):
    cmd = [EXE, "train", "--cluster", "dgx-a100", "--nodes", str(row["gpus"] // 8), "--model", row["model"],
           "--tp", str(row["tp"]), "--pp", str(row["pp"]), "--dp", str(row["dp"]), "--global-batch", str(row["gbs"]),
           "--micro-batch", str(row["mb"]), "--virtual-stages", str(row["vs"]), "--recompute", "full",
           "--attention", "materialized", "--tp-backward-overlap", "off", "--overlap-grad-reduce", "off", "--compute-profile", prof, "--format", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    # The recorded command names the profile relative to the repository, so results.json is the same
    # on every checkout.
    shown = [os.path.relpath(a, os.path.dirname(os.path.dirname(HERE))) if a == prof else a for a in cmd[1:]]
    return json.loads(out), " ".join(shown)


def predict(r, x, y):
    return r["F"] / (r["C"] / x + r["M"] / y + r["R"])


def fit(rs, idx):
    """(x, y) minimising the squared relative TFLOP/s error over rows idx."""
    err = lambda x, y: sum((predict(rs[k], x, y) / rs[k]["measured"] - 1) ** 2 for k in idx)
    ys = range(300, 1001, 2) if FIT_MEMORY else [round(HBM_EFFICIENCY * 1000)]
    return grid_fit(err, range(300, 1001, 2), ys, 20, 20 if FIT_MEMORY else 0)


def main():
    rs = rows()
    tmp = os.path.join(HERE, "tmp-profile.json")
    points = os.path.join(HERE, "fit-points.json")  # the interpolation per row, reused with REUSE=1
    if os.environ.get("REUSE") == "1":
        for r, p in zip(rs, json.load(open(points))):
            r.update(p)
    for r in rs:
        if "C" in r:
            continue
        last = {}

        def time_at(x, y, r=r):
            profile(x, y, tmp)
            last["d"] = run(r, tmp)[0]
            return last["d"]["iteration_s"]

        # with y fixed, two runs at that y give T = C/x + R' (M/y folded into R', M = 0)
        y0 = Y0 if FIT_MEMORY else HBM_EFFICIENCY
        r["C"], r["M"], r["R"] = interpolate(time_at, X0, X1, y0, Y1 if FIT_MEMORY else None)
        # hardware FLOPs per GPU per iteration (TFLOP): the paper counts recomputation (its eq. 3)
        r["F"] = last["d"]["hardware_flops"] / r["gpus"] / 1e12
        print(f"# {r['model']}: C = {r['C']:.3f} s, M = {r['M']:.3f} s, R = {r['R']:.3f} s", file=sys.stderr)
    with open(points, "w") as f:
        json.dump([{k: r[k] for k in ("model", "C", "M", "R", "F")} for r in rs], f, indent=1)
        f.write("\n")
    x, y = fit(rs, FIT_ROWS)
    loo = [fit(rs, [j for j in range(len(rs)) if j != i]) for i in range(len(rs))]
    prof = os.path.join(HERE, "a100-fitted.json")
    profile(x, y, prof)
    if os.path.exists(tmp):
        os.remove(tmp)
    table = []
    for i, r in enumerate(rs):
        d, cmd = run(r, prof)
        pred = d["hardware_tflops_per_gpu"]
        loo_pred = predict(r, *loo[i])
        b = d["breakdown_s"]
        table.append(dict(row=i + 1, model=r["model"], gpus=r["gpus"], tp=r["tp"], pp=r["pp"], dp=r["dp"], gbs=r["gbs"],
                          mb=r["mb"], vs=r["vs"], measured=r["measured"], predicted=round(pred, 1),
                          error_pct=round(100 * (pred / r["measured"] - 1), 1), fitted=i in FIT_ROWS,
                          loo_x=loo[i][0], loo_y=loo[i][1], loo_predicted=round(loo_pred, 1),
                          loo_error_pct=round(100 * (loo_pred / r["measured"] - 1), 1),
                          iteration_s=d["iteration_s"], gemm_s=round(r["C"] / x, 3),
                          compute_s=b["compute"], exposed_tp_s=b["tp"], exposed_dp_s=b["dp"], pp_bubble_s=b["pp"],
                          command=cmd))
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump({"fitted_gemm_efficiency": x, "hbm_efficiency": y, "hbm_efficiency_fitted": FIT_MEMORY,
                   "fit_rows": [i + 1 for i in FIT_ROWS],
                   "rows": table}, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "results.md"), "w") as f:
        f.write(f"Fitted on rows {', '.join(str(i + 1) for i in FIT_ROWS)}: GEMM efficiency x = {x:.4f}; "
                f"HBM efficiency y = {y:.4f} ({'fitted too' if FIT_MEMORY else 'measured, not fitted'})\n\n")
        f.write("| row | model | GPUs | TP | PP | DP | GBS | mb | chunks | measured TFLOP/s | predicted | error % | in fit | "
                "LOO x | LOO y | LOO predicted | LOO error % | iteration s | GEMM-bound s | compute s | "
                "exposed TP s | exposed DP s | PP bubble s |\n")
        f.write("|" + "---|" * 23 + "\n")
        for t in table:
            f.write(f"| {t['row']} | {t['model']} | {t['gpus']} | {t['tp']} | {t['pp']} | {t['dp']} | {t['gbs']} | {t['mb']} | "
                    f"{t['vs']} | {t['measured']} | {t['predicted']} | {t['error_pct']} | "
                    f"{'yes' if t['fitted'] else 'no'} | {t['loo_x']:.4f} | {t['loo_y']:.4f} | {t['loo_predicted']} | "
                    f"{t['loo_error_pct']} | {t['iteration_s']:.3f} | {t['gemm_s']:.3f} | "
                    f"{t['compute_s']:.3f} | {t['exposed_tp_s']:.3f} | {t['exposed_dp_s']:.3f} | {t['pp_bubble_s']:.3f} |\n")
        out = [abs(t["error_pct"]) for t in table if not t["fitted"]]
        f.write(f"\nout-of-sample rows: mean |error| {sum(out) / len(out):.1f}%, max {max(out):.1f}%; "
                f"leave-one-out: mean |error| {sum(abs(t['loo_error_pct']) for t in table) / len(table):.1f}%, "
                f"max {max(abs(t['loo_error_pct']) for t in table):.1f}%\n")
        f.write("\nGEMM-bound s: the part C/x of the iteration time that scales with 1/x (time in FLOP-bound ops on "
                "the critical path, bubble share included); compute s: busy time of the critical rank's compute stream.\n")
    with open(os.path.join(HERE, "table.dat"), "w") as f:
        f.write("# row gpus measured predicted loo_predicted\n")
        for t in table:
            f.write(f"{t['row']} {t['gpus']} {t['measured']} {t['predicted']} {t['loo_predicted']}\n")
    subprocess.run(["gnuplot", os.path.join(HERE, "plot.gp")], check=True, cwd=HERE)
    print(open(os.path.join(HERE, "results.md")).read())


if __name__ == "__main__":
    main()
