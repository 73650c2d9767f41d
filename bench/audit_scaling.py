#!/usr/bin/python3
"""The sampler audit as the work grows (issue 29).

Runs //samplers:audit --num_ids=N --world_size=W --epochs=1
--policy=masked_tail for each N (default 1 M, 3 M and 10 M ids), each in a
fresh process, one after another, and prints per size: wall seconds, the
process's peak RSS (its own ru_maxrss, from wait4), the JSON's and the side
file's bytes, and seconds per million ids; then the targets: the largest
size in under 10 s and under 1 GB of peak memory, and a linear cost
(seconds per million ids at the largest size at most 1.5 times the
smallest's). Writes DIR/audit_scaling.json with the same figures. Run it on
an otherwise idle machine, with the optimised build:

  bazel run --config=bench //bench:audit_scaling -- --out=DIR

Usage: audit_scaling.py AUDIT [--out=DIR] [--ids=N,N,...] [--world_size=W]
Exit 0 once every size ran (targets met or not), 2 for bad flags, 1 when an
audit fails.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_support as support  # pylint: disable=wrong-import-position

TARGET_SECONDS = 10.0
TARGET_PEAK_BYTES = 1e9
LINEAR_FACTOR = 1.5


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audit")
    parser.add_argument("--out", default="")
    parser.add_argument("--ids", default="1000000,3000000,10000000")
    parser.add_argument("--world_size", type=int, default=8)
    args = parser.parse_args(argv)
    try:
        args.ids = [int(n) for n in args.ids.split(",")]
    except ValueError:
        parser.error(f"--ids={args.ids}: give sizes like 1000000,3000000")
    if not args.ids or any(n < 1 for n in args.ids):
        parser.error(f"--ids={args.ids}: every size must be >= 1")
    if args.world_size < 1:
        parser.error(f"--world_size={args.world_size}: must be >= 1")
    return args


def run_one(audit, out_dir, num_ids, world_size):
    """One audit in a fresh process: its figures."""
    json_path = os.path.join(out_dir, f"audit_{num_ids}.json")
    start = time.monotonic()
    child = subprocess.Popen(
        [audit, f"--num_ids={num_ids}", f"--world_size={world_size}", "--epochs=1",
         "--policy=masked_tail", f"--out={json_path}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.stderr.write(stderr.decode(errors="replace")[-2000:])
        sys.exit(f"audit_scaling: the audit of {num_ids} ids exited {child.returncode}")
    with open(json_path) as f:
        summary = json.load(f)
    slots = summary["slots_file"]
    return {
        "num_ids": num_ids,
        "world_size": world_size,
        "seconds": seconds,
        "peak_rss_bytes": usage.ru_maxrss * 1024,
        "json_bytes": os.path.getsize(json_path),
        "slots_file_bytes": os.path.getsize(os.path.join(out_dir, slots)) if slots else 0,
        "seconds_per_million_ids": seconds / (num_ids / 1e6),
    }


def targets(runs):
    largest, smallest = runs[-1], runs[0]
    linear = largest["seconds_per_million_ids"] / smallest["seconds_per_million_ids"]
    return [
        {"target": f"{largest['num_ids']} ids in seconds", "measured": largest["seconds"],
         "comparison": "<", "threshold": TARGET_SECONDS,
         "met": largest["seconds"] < TARGET_SECONDS},
        {"target": f"{largest['num_ids']} ids, peak memory bytes",
         "measured": largest["peak_rss_bytes"], "comparison": "<",
         "threshold": TARGET_PEAK_BYTES,
         "met": largest["peak_rss_bytes"] < TARGET_PEAK_BYTES},
        {"target": "seconds per million ids, largest over smallest size",
         "measured": linear, "comparison": "<=", "threshold": LINEAR_FACTOR,
         "met": linear <= LINEAR_FACTOR},
    ]


def main(argv):
    args = parse(argv)
    out_dir = support.out_folder(args.out, "audit_scaling")
    load_before = support.load_average()
    runs = [run_one(os.path.abspath(args.audit), out_dir, n, args.world_size)
            for n in sorted(args.ids)]
    checks = targets(runs)
    print(f"sampler audit, {args.world_size} ranks, 1 epoch, masked_tail; "
          f"load average before {load_before}")
    print(f"  {'ids':>10} {'seconds':>8} {'peak MB':>8} {'JSON MB':>8} "
          f"{'slots MB':>9} {'s per M ids':>11}")
    for r in runs:
        print(f"  {r['num_ids']:>10} {r['seconds']:>8.2f} {r['peak_rss_bytes'] / 1e6:>8.0f} "
              f"{r['json_bytes'] / 1e6:>8.1f} {r['slots_file_bytes'] / 1e6:>9.1f} "
              f"{r['seconds_per_million_ids']:>11.3f}")
    support.print_targets(checks)
    support.write_report(out_dir, "audit_scaling.json",
                         {"runs": runs, "targets": checks, "load_average_before": load_before})


if __name__ == "__main__":
    main(sys.argv[1:])
