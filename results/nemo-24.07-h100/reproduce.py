#!/usr/bin/env python3
"""NeMo 24.07 performance summary on DGX H100 (FP8 pre-training) predicted by `commstack train`, and the
H100 compute profile calibrated from its single-node / TP1 rows.

Published numbers: NVIDIA NeMo docs/source/performance/performance_summary.md at commit 8e3d65dc ('24.07
perf numbers'), copied cell by cell with its header in
workloads/reference/training_nemo-24.07_perf-summary_dgx-h100.csv: GPUs, global and micro batch, sequence,
TP, PP, CP, VP and tokens/s/GPU per model. The metric compared here is tokens/s per GPU (the model-FLOPs
column depends on each framework's FLOP formula; tokens do not).

Config per row: cluster `dgx-h100` (8 H100 SXM, NVSwitch, 8 x 400G NDR rails), the row's TP/PP/CP/VP,
batch and sequence; FP8 GEMMs (`--precision fp8`, Transformer Engine), fused attention (`--attention
flash`), sequence parallelism where TP > 1, distributed optimizer (`--zero 1`), no activation
recomputation, gradient reduction overlapped with the backward, the distributed optimizer's parameter
all-gather overlapped with the next forward (`--overlap-param-gather on`: NeMo's DP communication
overlap, overlap_grad_sync and overlap_param_gather, docs/source/features/optimizations/
communication_overlap.rst in NVIDIA/NeMo) and the asynchronous TP reduction in the backward (NeMo 24.07 /
Megatron-Core defaults for these runs). Not modelled: Transformer Engine's
userbuffer overlap of the forward TP communication with the GEMMs (TP comm overlap), so the TP4 rows
keep their forward TP collectives exposed. The Nemotron rows are skipped (squared-ReLU MLP and other
architecture details the model zoo does not describe).

Calibration, two parameters of the H100 compute profile:
  x = tensor-core efficiency: fraction of the peak the GEMMs reach (of the FP8 peak, 1979 TFLOP/s, for the
      FP8 GEMMs; of the BF16 peak for the fused attention kernel, which runs in BF16);
  y = HBM efficiency: fraction of 3.35 TB/s the memory-bound kernels reach;
FITTED on rows FIT (default: the three smallest-scale rows: GPT3-5B on 64 GPUs with TP1, LLAMA2-7B and
LLAMA3-8B on one node), least squares on the relative tokens/s error, with T(x, y) = C/x + M/y + R per row
from three simulator runs (exact for ops purely compute- or memory-bound). Every other row (16-512
GPUs, TP 2-4, PP 4-8, interleaving, CP) is out of sample; a leave-one-out column refits on all other rows.
Reported predictions are real simulator runs at the fitted (x, y).

usage: reproduce.py [path/to/commstack]   (run from the repository root)
env:   FIT=GPT3-5B,LLAMA2-7B,LLAMA3-8B (models the fit sees), REUSE=1 (reuse fit-points.json)
"""
import csv, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from efficiency_fit import grid_fit, interpolate  # noqa: E402
EXE = sys.argv[1] if len(sys.argv) > 1 else "build/commstack"
CSV = "workloads/reference/training_nemo-24.07_perf-summary_dgx-h100.csv"
MODEL = {"GPT3-5B": os.path.join(HERE, "gpt3-5b.json"), "GPT3-20B": os.path.join(HERE, "gpt3-20b.json"),
         "GPT3-175B": "gpt3-175b", "LLAMA2-7B": "llama2-7b", "LLAMA2-13B": "llama2-13b", "LLAMA2-70B": "llama2-70b",
         "LLAMA3-8B": "llama3-8b", "LLAMA3-70B": "llama3-70b"}
FIT = os.environ.get("FIT", "GPT3-5B,LLAMA2-7B,LLAMA3-8B").split(",")
X0, X1, Y0, Y1 = 0.45, 0.6, 0.6, 0.8
PEAKS = dict(peak_bf16_flops=989.4e12, peak_fp8_flops=1978.9e12, hbm_bytes_per_s=3.35e12, memory_bytes=80e9)


def rows():
    with open(CSV) as f:
        lines = f.read().split("\n")
    # the pre-training table: from its header to the next table's context line
    start = next(i for i, l in enumerate(lines) if l.startswith("Model,#-GPUs"))
    out = []
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(('"#', "#"))), len(lines))
    for r in csv.DictReader(l for l in lines[start:end] if l):
        if r["Model"] not in MODEL:
            continue
        gpus, tp, pp, cp = (int(r[k]) for k in ("#-GPUs", "TP", "PP", "CP"))
        out.append(dict(name=f"{r['Model']} {gpus}", key=r["Model"], model=MODEL[r["Model"]], gpus=gpus, tp=tp, pp=pp,
                        cp=cp, vs=int(r["VP"]), dp=gpus // (tp * pp * cp), gbs=int(r["GBS"]), mb=int(r["MBS"]),
                        seq=int(r["Sequence Length"]), measured=float(r["Tokens / sec / GPU"])))
    return out


def profile(x, y, path):
    with open(path, "w") as f:
        json.dump({"name": "h100-sxm5-fitted",
                   "provenance": "H100 SXM5 datasheet peaks (989.4 TFLOP/s BF16, 1978.9 FP8, 3.35 TB/s HBM3, 80 GB); "
                                 "tensor-core efficiency (gemm, attention) and HBM efficiency (memory) fitted to the "
                                 f"NeMo 24.07 DGX-H100 FP8 pre-training rows {', '.join(FIT)} (tokens/s/GPU); "
                                 "results/nemo-24.07-h100",
                   **PEAKS, "efficiency": {"gemm": round(x, 4), "attention": round(x, 4), "memory": round(y, 4)}},
                  f, indent=2)
        f.write("\n")


def run(r, prof):
    cmd = [EXE, "train", "--cluster", "dgx-h100", "--nodes", str(r["gpus"] // 8), "--model", r["model"],
           "--tp", str(r["tp"]), "--pp", str(r["pp"]), "--cp", str(r["cp"]), "--dp", str(r["dp"]),
           "--global-batch", str(r["gbs"]), "--micro-batch", str(r["mb"]), "--seq", str(r["seq"]),
           "--virtual-stages", str(r["vs"]), "--precision", "fp8", "--zero", "1", "--overlap-param-gather", "on", "--recompute", "none",
           "--compute-profile", prof, "--format", "json"]
    if r["tp"] > 1:
        cmd.append("--sequence-parallel")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out), " ".join(cmd[1:]).replace(os.getcwd() + "/", "")


def predict(r, x, y):
    return r["tokens_per_gpu"] / (r["C"] / x + r["M"] / y + r["R"])


def fit(rs, idx):
    """(x, y) minimising the squared relative tokens/s error over rows idx."""
    err = lambda x, y: sum((predict(rs[k], x, y) / rs[k]["measured"] - 1) ** 2 for k in idx)
    return grid_fit(err, range(200, 1001, 4), range(200, 1001, 4), 40, 40)


def main():
    rs = rows()
    fit_idx = [i for i, r in enumerate(rs) if r["key"] in FIT]
    tmp = os.path.join(HERE, "tmp-profile.json")
    points = os.path.join(HERE, "fit-points.json")
    if os.environ.get("REUSE") == "1":
        for r, p in zip(rs, json.load(open(points))):
            r.update(p)
    for r in rs:
        if "C" in r:
            continue
        def time_at(x, y, r=r):
            profile(x, y, tmp)
            return run(r, tmp)[0]["iteration_s"]

        r["C"], r["M"], r["R"] = interpolate(time_at, X0, X1, Y0, Y1)
        r["tokens_per_gpu"] = r["gbs"] * r["seq"] / r["gpus"]
        print(f"# {r['name']}: C = {r['C']:.3f} s, M = {r['M']:.3f} s, R = {r['R']:.3f} s", file=sys.stderr)
    with open(points, "w") as f:
        json.dump([{k: r[k] for k in ("name", "C", "M", "R", "tokens_per_gpu")} for r in rs], f, indent=1)
        f.write("\n")
    x, y = fit(rs, fit_idx)
    loo = [fit(rs, [j for j in range(len(rs)) if j != i]) for i in range(len(rs))]
    prof = os.path.join(HERE, "h100-fitted.json")
    profile(x, y, prof)
    if os.path.exists(tmp):
        os.remove(tmp)
    table = []
    for i, r in enumerate(rs):
        d, cmd = run(r, prof)
        pred = d["tokens_per_s"] / r["gpus"]
        lp = predict(r, *loo[i])
        b = d["breakdown_s"]
        table.append(dict(model=r["name"], gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], vs=r["vs"], dp=r["dp"],
                          gbs=r["gbs"], mb=r["mb"], seq=r["seq"], measured=r["measured"], predicted=round(pred),
                          error_pct=round(100 * (pred / r["measured"] - 1), 1), fitted=i in fit_idx,
                          loo_x=loo[i][0], loo_y=loo[i][1], loo_predicted=round(lp),
                          loo_error_pct=round(100 * (lp / r["measured"] - 1), 1), iteration_s=d["iteration_s"],
                          mfu_pct=round(100 * d["mfu"], 1), compute_s=b["compute"], exposed_tp_s=b["tp"],
                          exposed_cp_s=b["cp"], exposed_dp_s=b["dp"], pp_s=b["pp"], command=cmd))
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump({"fitted_efficiency": x, "hbm_efficiency": y, "fit_rows": FIT, "rows": table}, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "results.md"), "w") as f:
        f.write(f"Fitted on {', '.join(FIT)}: tensor-core efficiency x = {x:.4f}, HBM efficiency y = {y:.4f}\n\n")
        f.write("| model GPUs | TP | PP | CP | VP | DP | GBS | mb | seq | measured tok/s/GPU | predicted | error % | in fit "
                "| LOO predicted | LOO error % | iteration s | MFU % | compute s | exposed TP s | exposed CP s | "
                "exposed DP s | PP s |\n")
        f.write("|" + "---|" * 22 + "\n")
        for t in table:
            f.write(f"| {t['model']} | {t['tp']} | {t['pp']} | {t['cp']} | {t['vs']} | {t['dp']} | {t['gbs']} | {t['mb']} | "
                    f"{t['seq']} | {t['measured']:.0f} | {t['predicted']} | {t['error_pct']} | "
                    f"{'yes' if t['fitted'] else 'no'} | {t['loo_predicted']} | {t['loo_error_pct']} | "
                    f"{t['iteration_s']:.3f} | {t['mfu_pct']} | {t['compute_s']:.3f} | {t['exposed_tp_s']:.3f} | "
                    f"{t['exposed_cp_s']:.3f} | {t['exposed_dp_s']:.3f} | {t['pp_s']:.3f} |\n")
        out = [abs(t["error_pct"]) for t in table if not t["fitted"]]
        lo = [abs(t["loo_error_pct"]) for t in table]
        f.write(f"\nout-of-sample rows: mean |error| {sum(out) / len(out):.1f}%, max {max(out):.1f}%; "
                f"leave-one-out: mean |error| {sum(lo) / len(lo):.1f}%, max {max(lo):.1f}%\n")
    with open(os.path.join(HERE, "table.dat"), "w") as f:
        f.write("# model measured predicted loo_predicted (tokens/s per GPU)\n")
        for t in table:
            f.write(f"\"{t['model']}\" {t['measured']:.0f} {t['predicted']} {t['loo_predicted']}\n")
    subprocess.run(["gnuplot", os.path.join(HERE, "plot.gp")], check=True, cwd=HERE)
    print(open(os.path.join(HERE, "results.md")).read())


if __name__ == "__main__":
    main()
