#!/usr/bin/python3
"""Validation predictions counted once as they grow (issue 29).

For each size N (default 1 M, 3 M and 10 M predictions, 1 % of them a
receipt's second copy, as duplicate_pad deals) runs W ranks of
//bench:dedup_worker (default 8) over a real c10d Gloo group, once with the
sorted streaming merge and once gathered (the trainer's two validation
paths, metrics/prediction_count.h), each in fresh processes, and prints per
run: rank 0's seconds (from a barrier), rank 0's memory above its start
during the count (VmHWM, reset before), the predictions the streamed merge
held at once, and the ranks' peak RSS summed (ru_maxrss from wait4); then
the targets: the streamed merge holds at most W x chunk predictions plus
one receipt's copies, and rank 0's memory above start at the largest size
with the streamed merge is at most a tenth of the gathered path's. A
gathered run that would not fit in the memory available (estimated from
the last gathered run, per prediction) is skipped and said so, and the
comparison uses the largest gathered size measured, scaled linearly.
Writes DIR/dedup_scaling.json with the same figures. Run it on an
otherwise idle machine, with the optimised build:

  bazel run --config=bench //bench:dedup_scaling -- --out=DIR

Usage: dedup_scaling.py WORKER [--out=DIR] [--predictions=N,N,...]
  [--world_size=W] [--chunk_rows=C]
Exit 0 once every run ran (targets met or not), 2 for bad flags, 1 when a
rank fails.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_support as support  # pylint: disable=wrong-import-position

MEMORY_FRACTION = 0.1
PAD_FRACTION = 0.01
SAFETY = 1.3


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("worker")
    parser.add_argument("--out", default="")
    parser.add_argument("--predictions", default="1000000,3000000,10000000")
    parser.add_argument("--world_size", type=int, default=8)
    parser.add_argument("--chunk_rows", type=int, default=4096)
    args = parser.parse_args(argv)
    try:
        args.predictions = sorted(int(n) for n in args.predictions.split(","))
    except ValueError:
        parser.error(f"--predictions={args.predictions}: give sizes like 1000000,3000000")
    if any(n < 1 for n in args.predictions):
        parser.error(f"--predictions={args.predictions}: every size must be >= 1")
    if args.world_size < 1:
        parser.error(f"--world_size={args.world_size}: must be >= 1")
    if args.chunk_rows < 1:
        parser.error(f"--chunk_rows={args.chunk_rows}: must be >= 1")
    return args


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def run_one(worker, out_dir, predictions, world_size, merge, chunk_rows):
    """W ranks in fresh processes: rank 0's figures and the ranks' peak RSS
    (each rank's own ru_maxrss, from wait4). Each rank's output goes to
    DIR/MERGE_N.rankR.log."""
    port = free_port()
    children, logs = [], []
    for rank in range(world_size):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world_size),
                   LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        log = os.path.join(out_dir, f"{merge}_{predictions}.rank{rank}.log")
        logs.append(log)
        with open(log, "wb") as f:
            children.append(subprocess.Popen(
                [worker, f"--predictions={predictions}", f"--merge={merge}",
                 f"--chunk_rows={chunk_rows}", f"--pad_fraction={PAD_FRACTION}"],
                stdout=f, stderr=subprocess.STDOUT, env=env))
    peak_sum, codes = 0, []
    for child in children:
        _, status, usage = os.wait4(child.pid, 0)
        codes.append(os.waitstatus_to_exitcode(status))
        peak_sum += usage.ru_maxrss * 1024
    failed = [r for r, code in enumerate(codes) if code != 0]
    if failed:
        with open(logs[failed[0]], errors="replace") as f:
            sys.stderr.write(f.read()[-2000:])
        sys.exit(f"dedup_scaling: rank {failed[0]} of the {merge} count of {predictions} "
                 f"predictions exited {codes[failed[0]]}")
    with open(logs[0]) as f:
        lines = [line for line in f if line.startswith("{")]
    figures = json.loads(lines[-1])
    figures["ranks_peak_rss_sum_bytes"] = peak_sum
    return figures


def gathered_fits(runs, predictions):
    """Whether a gathered run of `predictions` fits the memory available,
    from the last gathered run's summed peak per prediction (SAFETY times
    it); the first always runs."""
    gathered = [r for r in runs if r["merge"] == "gathered"]
    if not gathered:
        return True
    per_prediction = gathered[-1]["ranks_peak_rss_sum_bytes"] / gathered[-1]["predictions"]
    return SAFETY * per_prediction * predictions < memory_available_bytes()


def targets(runs, world_size, chunk_rows):
    streamed = [r for r in runs if r["merge"] == "streamed"]
    gathered = [r for r in runs if r["merge"] == "gathered"]
    largest = streamed[-1]
    # One receipt's copies besides a chunk per rank: two here (1 % dealt twice).
    held_bound = world_size * chunk_rows + 2
    compare = next((g for g in gathered if g["predictions"] == largest["predictions"]),
                   gathered[-1])
    scale = largest["predictions"] / compare["predictions"]
    gathered_memory = compare["peak_above_start_bytes"] * scale
    ratio = largest["peak_above_start_bytes"] / gathered_memory if gathered_memory else 0
    scaled = "" if scale == 1 else (f" (gathered measured at {compare['predictions']}, "
                                    f"scaled x{scale:g})")
    return [
        {"target": f"{largest['predictions']} predictions: most predictions the streamed "
                   f"merge held", "measured": largest["peak_held"], "comparison": "<=",
         "threshold": held_bound, "met": largest["peak_held"] <= held_bound},
        {"target": f"{largest['predictions']} predictions: rank 0's memory above start, "
                   f"streamed over gathered{scaled}", "measured": ratio, "comparison": "<=",
         "threshold": MEMORY_FRACTION, "met": ratio <= MEMORY_FRACTION},
    ]


def main(argv):
    args = parse(argv)
    out_dir = support.out_folder(args.out, "dedup_scaling")
    worker = os.path.abspath(args.worker)
    load_before = support.load_average()
    runs, skipped = [], []
    for n in args.predictions:
        runs.append(run_one(worker, out_dir, n, args.world_size, "streamed", args.chunk_rows))
        if gathered_fits(runs, n):
            runs.append(run_one(worker, out_dir, n, args.world_size, "gathered", args.chunk_rows))
        else:
            skipped.append(n)
    checks = targets(runs, args.world_size, args.chunk_rows)
    print(f"validation dedup, {args.world_size} ranks, {PAD_FRACTION:.0%} duplicates, "
          f"chunks of {args.chunk_rows}; load average before {load_before}")
    print(f"  {'predictions':>11} {'merge':>9} {'seconds':>8} {'rank 0 MB':>10} "
          f"{'held':>7} {'all ranks MB':>13}")
    for r in runs:
        print(f"  {r['predictions']:>11} {r['merge']:>9} {r['seconds']:>8.2f} "
              f"{r['peak_above_start_bytes'] / 1e6:>10.1f} {r['peak_held']:>7} "
              f"{r['ranks_peak_rss_sum_bytes'] / 1e6:>13.0f}")
    for n in skipped:
        print(f"  {n:>11}  gathered skipped: it would not fit in the "
              f"{memory_available_bytes() / 1e9:.1f} GB available")
    support.print_targets(checks)
    support.write_report(out_dir, "dedup_scaling.json", {
        "runs": runs, "gathered_skipped": skipped, "targets": checks,
        "load_average_before": load_before})


if __name__ == "__main__":
    main(sys.argv[1:])
