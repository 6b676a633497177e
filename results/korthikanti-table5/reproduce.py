#!/usr/bin/env python3
"""Korthikanti et al. (arXiv:2205.05198) Table 5: seconds per iteration on Selene (A100), baseline
(full recomputation, no sequence parallelism) and "present work" (sequence parallelism + selective
recomputation), predicted by `commstack train`.

No parameter is fitted here: the compute profile is the one fitted to Megatron SC'21 Table 1 rows 1-3
(results/megatron-sc21-table1/a100-fitted.json), so every row of this table is out of sample.
Pipeline: interleaved with 3 model chunks for 175B and 530B, 1F1B for 22B (PP=1) and 1T (per the
paper's notes and calculon's validation configs, see the reference CSV header). Attention core:
Megatron-LM 2022's materialized one (seq^2 scores, softmax and dropout through HBM; the tensors that
selective recomputation recomputes), --attention materialized.

usage: reproduce.py [path/to/commstack]   (run from the repository root, after the Table 1 reproduction)
"""
import csv, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXE = sys.argv[1] if len(sys.argv) > 1 else "build/commstack"
CSV = "workloads/reference/training_korthikanti_activation-recompute_tables3-5.csv"
PROFILE = "results/megatron-sc21-table1/a100-fitted.json"
MODEL = {"22B": ("korthikanti-22b", 1), "175B (GPT-3)": ("korthikanti-175b", 3), "530B (MT-NLG)": ("korthikanti-530b", 3),
         "1T": ("korthikanti-1t", 1)}


def run(r, variant):
    model, vs = MODEL[r["model"]]
    gpus, tp, pp = int(r["num_gpus"]), int(r["tensor_parallel"]), int(r["pipeline_parallel"])
    cmd = [EXE, "train", "--cluster", "dgx-a100", "--nodes", str(max(1, gpus // 8)), "--model", model, "--tp", str(tp),
           "--pp", str(pp), "--dp", str(gpus // (tp * pp)), "--global-batch", r["global_batch"], "--micro-batch",
           r["micro_batch"], "--virtual-stages", str(vs), "--attention", "materialized", "--compute-profile", PROFILE, "--format", "json"]
    cmd += ["--recompute", "full"] if variant == "full" else ["--recompute", "selective", "--sequence-parallel"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out), " ".join(cmd[1:])


def main():
    with open(CSV) as f:
        rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    table = []
    for r in rows:
        for variant, col in (("full", "full_recompute_iter_time_s"), ("sp+selective", "present_work_iter_time_s")):
            d, cmd = run(r, variant)
            meas = float(r[col])
            table.append(dict(model=r["model"], gpus=int(r["num_gpus"]), variant=variant, measured_s=meas,
                              predicted_s=round(d["iteration_s"], 3), error_pct=round(100 * (d["iteration_s"] / meas - 1), 1),
                              mfu_predicted=round(100 * d["mfu"], 1), mfu_measured=r["model_flops_utilization"],
                              breakdown_s=d["breakdown_s"], command=cmd))
            print(table[-1]["model"], variant, meas, table[-1]["predicted_s"], file=sys.stderr)
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump({"compute_profile": PROFILE, "rows": table}, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "results.md"), "w") as f:
        f.write(f"compute profile {PROFILE} (fitted on Megatron SC'21 Table 1 rows 1-3 only; nothing fitted here)\n\n")
        f.write("| model | GPUs | variant | measured s | predicted s | error % | MFU predicted % | MFU measured (present work) |"
                " exposed TP s | PP bubble s |\n|" + "---|" * 10 + "\n")
        for t in table:
            f.write(f"| {t['model']} | {t['gpus']} | {t['variant']} | {t['measured_s']} | {t['predicted_s']} | {t['error_pct']} | "
                    f"{t['mfu_predicted']} | {t['mfu_measured'] if t['variant'] != 'full' else ''} | "
                    f"{t['breakdown_s']['tp']:.3f} | {t['breakdown_s']['pp']:.3f} |\n")
        errs = [abs(t["error_pct"]) for t in table]
        f.write(f"\nmean |error| {sum(errs) / len(errs):.1f}%, max {max(errs):.1f}%\n")
    with open(os.path.join(HERE, "table.dat"), "w") as f:
        f.write("# index label measured predicted\n")
        for i, t in enumerate(table):
            f.write(f"{i} \"{t['model'].split()[0]} {t['variant']}\" {t['measured_s']} {t['predicted_s']}\n")
    subprocess.run(["gnuplot", os.path.join(HERE, "plot.gp")], check=True, cwd=HERE)
    print(open(os.path.join(HERE, "results.md")).read())


if __name__ == "__main__":
    main()
