#!/usr/bin/python3
"""What checkpoint saves cost the training loop (issue 29).

Trains one config three ways in each round, side by side, in an order that
rotates from round to round: without saving, saving synchronously every N
updates, and saving in the background (checkpoint { async: true }) every N
updates, each in a fresh run folder for a bounded number of updates, and
reads each run's run_summary.json. Per round it takes: the synchronous
save's time over one fsync'd sequential write of as many bytes
(save_vs_sequential_ratio); the background save's blocked time per save
(blocked_seconds_median: the wait for a save in flight, then the copy) over
the synchronous save's time in the same round; and the throughput with
saves (examples_per_second_with_saves: accepted examples over the loop's
wall time, saves included) of each saving run over the run without saving.
Prints the medians over the rounds with each round's value, then the
targets: a synchronous save at most 1.3x the sequential write, and a
background save blocking the loop at most 10 % of a synchronous save's
time. Writes DIR/checkpoint_cost.json with the same figures. Run it on an
otherwise idle machine, with the optimised build:

  bazel run --config=bench //bench:checkpoint_cost -- --out=DIR

Usage: checkpoint_cost.py TRAIN [--config=PBTXT] [--out=DIR] [--rounds=R]
  [--every=N] [--updates=U]
The config needs a `checkpoint { ... }` line and a `run { ... }` line (the
study's configs have both): this script replaces them. Exit 0 once every
run ran (targets met or not), 2 for bad flags or a config without those
lines, 1 when a run fails.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_support as support  # pylint: disable=wrong-import-position

SYNC_TARGET = 1.3
BLOCKED_TARGET = 0.10
VARIANTS = ("no_saving", "sync", "async")


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train")
    parser.add_argument("--config", default="configs/two_worker_masked_tail.pbtxt")
    parser.add_argument("--out", default="")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--every", type=int, default=4)
    parser.add_argument("--updates", type=int, default=80)
    args = parser.parse_args(argv)
    for flag in ("rounds", "every", "updates"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag}={getattr(args, flag)}: must be >= 1")
    if args.updates < 2 * args.every:
        parser.error(f"--updates={args.updates}: must be at least twice --every={args.every}")
    try:
        with open(args.config) as f:
            args.base = f.read()
    except OSError as e:
        parser.error(f"--config={args.config}: {e.strerror}")
    for block in ("checkpoint", "run"):
        if len(re.findall(rf"^{block} {{.*}}$", args.base, flags=re.M)) != 1:
            parser.error(f"--config={args.config}: needs exactly one one-line `{block} {{ ... }}`")
    return args


def variant_config(args, variant, out_dir):
    checkpoint = {"no_saving": "checkpoint { every_updates: 0 }",
                  "sync": f"checkpoint {{ every_updates: {args.every} keep_last: 2 }}",
                  "async": f"checkpoint {{ every_updates: {args.every} keep_last: 2 async: true }}"}
    text = re.sub(r"^checkpoint \{.*\}$", checkpoint[variant], args.base, flags=re.M)
    text = re.sub(r"^run \{.*\}$",
                  f'run {{ output_dir: "{out_dir}" log_every_updates: 1000 '
                  f"max_updates: {args.updates} }}", text, flags=re.M)
    path = os.path.join(out_dir + ".pbtxt")
    with open(path, "w") as f:
        f.write(text)
    return path


def run_one(args, variant, out_dir):
    config = variant_config(args, variant, out_dir)
    log = out_dir + ".log"
    with open(log, "w") as f:
        code = subprocess.run([args.train, f"--config={config}", f"--out={out_dir}",
                               "--whole_run_parity=false"], stdout=f, stderr=subprocess.STDOUT,
                              timeout=1800).returncode
    if code != 0:
        with open(log, errors="replace") as f:
            sys.stderr.write(f.read()[-2000:])
        sys.exit(f"checkpoint_cost: the {variant} run exited {code}; see {log}")
    with open(os.path.join(out_dir, "run_summary.json")) as f:
        summary = json.load(f)
    cost = summary["checkpoint"]
    return {
        "examples_per_second_with_saves": summary["examples_per_second_with_saves"],
        "generations_saved": cost["generations_saved"],
        "bytes_per_generation": cost["bytes_per_generation"],
        "save_seconds_median": cost["save_seconds_median"],
        "sequential_write_seconds_median": cost["sequential_write_seconds_median"],
        "save_vs_sequential_ratio": cost["save_vs_sequential_ratio"],
        "blocked_seconds_median": cost["blocked_seconds_median"],
        "saves_that_waited": cost["saves_that_waited"],
    }


def round_ratios(runs):
    sync, background, plain = runs["sync"], runs["async"], runs["no_saving"]
    return {
        "sync_save_vs_sequential": sync["save_vs_sequential_ratio"],
        "async_blocked_vs_sync_save": (background["blocked_seconds_median"] /
                                       sync["save_seconds_median"]),
        "sync_throughput_vs_no_saving": (sync["examples_per_second_with_saves"] /
                                         plain["examples_per_second_with_saves"]),
        "async_throughput_vs_no_saving": (background["examples_per_second_with_saves"] /
                                          plain["examples_per_second_with_saves"]),
    }


def main(argv):
    args = parse(argv)
    out_dir = support.out_folder(args.out, "checkpoint_cost")
    train = os.path.abspath(args.train)
    load_before = support.load_average()
    rounds = []
    for r in range(args.rounds):
        order = VARIANTS[r % 3:] + VARIANTS[:r % 3]
        runs = {v: run_one(args, v, os.path.join(out_dir, f"round{r + 1}_{v}")) for v in order}
        rounds.append({"order": list(order), "runs": runs, "ratios": round_ratios(runs)})
    medians = {k: statistics.median(r["ratios"][k] for r in rounds) for k in rounds[0]["ratios"]}
    spreads = {k: [r["ratios"][k] for r in rounds] for k in medians}
    targets = [
        {"target": "synchronous save / one fsync'd sequential write",
         "measured": medians["sync_save_vs_sequential"], "comparison": "<=",
         "threshold": SYNC_TARGET, "met": medians["sync_save_vs_sequential"] <= SYNC_TARGET},
        {"target": "background save: the loop blocked per save / a synchronous save",
         "measured": medians["async_blocked_vs_sync_save"], "comparison": "<=",
         "threshold": BLOCKED_TARGET,
         "met": medians["async_blocked_vs_sync_save"] <= BLOCKED_TARGET},
    ]
    first = rounds[0]["runs"]["sync"]
    print(f"checkpoint cost, {args.config}, a save every {args.every} of {args.updates} "
          f"updates ({first['bytes_per_generation'] / 1e6:.2f} MB per generation), "
          f"{args.rounds} rounds; load average before {load_before}")
    print(f"  {'round':>5} {'variant':>10} {'examples/s':>11} {'save ms':>8} "
          f"{'seq ms':>7} {'blocked ms':>11} {'waited':>6}")
    for i, r in enumerate(rounds):
        for v in VARIANTS:
            run = r["runs"][v]
            print(f"  {i + 1:>5} {v:>10} {run['examples_per_second_with_saves']:>11.0f} "
                  f"{run['save_seconds_median'] * 1e3:>8.2f} "
                  f"{run['sequential_write_seconds_median'] * 1e3:>7.2f} "
                  f"{run['blocked_seconds_median'] * 1e3:>11.3f} {run['saves_that_waited']:>6}")
    for k, value in medians.items():
        print(f"  {k}: {value:.3f} ({', '.join(f'{x:.3f}' for x in spreads[k])})")
    support.print_targets(targets)
    support.write_report(out_dir, "checkpoint_cost.json", {
        "config": args.config, "every_updates": args.every, "updates": args.updates,
        "rounds": rounds, "medians": medians, "spreads": spreads,
        "targets": targets, "load_average_before": load_before})


if __name__ == "__main__":
    main(sys.argv[1:])
