#!/usr/bin/python3
"""Cost as the work grows (issue 29): every figure its "done when" names,
in one run, each against its target.

Runs, one after the other, in DIR/<name>/:
  audit        audit_scaling.py: the sampler audit at 1 M, 3 M and 10 M ids
               on 8 ranks, one epoch (time, peak memory, linear growth);
  dedup        dedup_scaling.py: validation's streamed merge of 10 M
               predictions from 8 ranks against the gathered path;
  receipts     receipt_memory.py: a rank's peak memory at 100 k and 1 M
               receipts with pixels rendered on demand and held, and the
               study config's throughput both ways;
  checkpoints  checkpoint_cost.py: the synchronous save against one fsync'd
               sequential write, the background save's blocked time.
Each writes its own JSON report and prints its table; this prints every
target again, together, and writes DIR/work_cost.json. About 10 minutes
on 2 vCPUs. Run it on an otherwise idle machine, with the optimised build:

  bazel run --config=bench //bench:work_cost -- --out=DIR

Usage: work_cost.py AUDIT DEDUP_WORKER TRAIN [--out=DIR] [--only=NAME,...]
Exit 0 once every benchmark ran (targets met or not), 2 for bad flags, 1
when one fails.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_support as support  # pylint: disable=wrong-import-position

# name: (script, the binary argument's index, its report)
BENCHMARKS = {
    "audit": ("audit_scaling.py", 0, "audit_scaling.json"),
    "dedup": ("dedup_scaling.py", 1, "dedup_scaling.json"),
    "receipts": ("receipt_memory.py", 2, "receipt_memory.json"),
    "checkpoints": ("checkpoint_cost.py", 2, "checkpoint_cost.json"),
}


def parse(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("audit")
  parser.add_argument("dedup_worker")
  parser.add_argument("train")
  parser.add_argument("--out", default="")
  parser.add_argument("--only", default=",".join(BENCHMARKS))
  args = parser.parse_args(argv)
  args.only = [n for n in args.only.split(",") if n]
  unknown = [n for n in args.only if n not in BENCHMARKS]
  if unknown or not args.only:
    parser.error(f"--only: {unknown or 'nothing'}; choose from {', '.join(BENCHMARKS)}")
  return args


def main(argv):
  args = parse(argv)
  binaries = [os.path.abspath(b) for b in (args.audit, args.dedup_worker, args.train)]
  out_dir = support.out_folder(args.out, "work_cost")
  load_before = support.load_average()
  results = {}
  for name in args.only:
    script, binary, report = BENCHMARKS[name]
    folder = os.path.join(out_dir, name)
    print(f"== {name}: {script}", flush=True)
    code = subprocess.run([sys.executable, os.path.join(HERE, script), binaries[binary],
                           f"--out={folder}"]).returncode
    if code != 0:
      sys.exit(f"work_cost: {script} exited {code}")
    with open(os.path.join(folder, report)) as f:
      results[name] = json.load(f)["targets"]
  print(f"cost as the work grows: every target (load average before {load_before})")
  for name, checks in results.items():
    print(f"  {name}:")
    for t in checks:
      print("    " + support.target_line(t))
  missed = sum(not t["met"] for checks in results.values() for t in checks)
  print(f"  {sum(len(c) for c in results.values()) - missed} met, {missed} missed")
  support.write_report(out_dir, "work_cost.json", {
      "targets": results, "load_average_before": load_before})


if __name__ == "__main__":
  main(sys.argv[1:])
