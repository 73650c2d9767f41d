#!/usr/bin/python3
"""What the receipts cost a rank as they grow (issue 29, item 3).

Memory: trains the million-receipt config (configs/million_receipts.pbtxt:
two workers, 16 x 16 synthetic receipts, 20 updates) at each --sizes
identity count twice, its pixels rendered on demand
(train --render_pixels_above=0) and held in memory (a threshold no size
reaches), and reads each rank's peak RSS (run_summary.json
timing[].peak_rss_mib). The growth per receipt is the on-demand peak's
between the smallest and the largest size, over the receipts between them:
what the compact index and the start-up's transient copies cost, since the
model and the pixel cache are the same at every size.

Throughput: trains the study's two-worker config (--study_config, whole)
with pixels held and rendered, side by side in each round, in an order
that alternates, and takes examples/s (run_summary.json
examples_per_second) rendered over held per round.

Prints the table and the targets: the on-demand peak growing at most about
100 bytes per receipt, and rendered throughput at least 0.9x held's on the
study config. Writes DIR/receipt_memory.json. Run it on an otherwise idle
machine, with the optimised build:

  bazel run --config=bench //bench:receipt_memory -- --out=DIR

Usage: receipt_memory.py TRAIN [--config=PBTXT] [--study_config=PBTXT]
  [--sizes=N,N,...] [--rounds=R] [--out=DIR]
Exit 0 once every run ran (targets met or not), 2 for bad flags or a config
without its `num_identities`, 1 when a run fails.
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

BYTES_PER_RECEIPT_TARGET = 100
THROUGHPUT_TARGET = 0.9
HELD = "--render_pixels_above=1099511627776"
RENDERED = "--render_pixels_above=0"


def parse(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("train")
  parser.add_argument("--config", default="configs/million_receipts.pbtxt")
  parser.add_argument("--study_config", default="configs/two_worker_masked_tail.pbtxt")
  parser.add_argument("--sizes", default="100000,1000000")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--out", default="")
  args = parser.parse_args(argv)
  try:
    args.sizes = sorted({int(s) for s in args.sizes.split(",")})
  except ValueError:
    parser.error(f"--sizes={args.sizes}: not a comma-separated list of identity counts")
  if len(args.sizes) < 2 or args.sizes[0] < 1:
    parser.error(f"--sizes: at least two counts of at least 1, got {args.sizes}")
  if args.rounds < 1:
    parser.error(f"--rounds={args.rounds}: must be >= 1")
  for flag in ("config", "study_config"):
    try:
      with open(getattr(args, flag)) as f:
        setattr(args, flag + "_text", f.read())
    except OSError as e:
      parser.error(f"--{flag}={getattr(args, flag)}: {e.strerror}")
  if len(re.findall(r"num_identities: \d+", args.config_text)) != 1:
    parser.error(f"--config={args.config}: needs exactly one `num_identities: N`")
  return args


def train(args, config_text, out_dir, pixels):
  """Trains `config_text` into OUT_DIR; returns its run_summary.json."""
  config = out_dir + ".pbtxt"
  with open(config, "w") as f:
    f.write(config_text)
  log = out_dir + ".log"
  with open(log, "w") as f:
    code = subprocess.run([args.train, f"--config={config}", f"--out={out_dir}",
                           "--whole_run_parity=false", pixels],
                          stdout=f, stderr=subprocess.STDOUT, timeout=3600).returncode
  if code != 0:
    with open(log, errors="replace") as f:
      sys.stderr.write(f.read()[-2000:])
    sys.exit(f"receipt_memory: the run in {out_dir} exited {code}; see {log}")
  with open(os.path.join(out_dir, "run_summary.json")) as f:
    return json.load(f)


def memory_run(args, out_dir, size, pixels):
  text = re.sub(r"num_identities: \d+", f"num_identities: {size}", args.config_text)
  name = "rendered" if pixels == RENDERED else "held"
  summary = train(args, text, os.path.join(out_dir, f"memory_{size}_{name}"), pixels)
  peaks = [t["peak_rss_mib"] * 2**20 for t in summary["timing"]]
  return {"identities": size, "pixels": name, "peak_rss_bytes_per_rank": peaks,
          "peak_rss_bytes": max(peaks), "examples_per_second": summary["examples_per_second"]}


def throughput_round(args, out_dir, r):
  order = (HELD, RENDERED) if r % 2 == 0 else (RENDERED, HELD)
  runs = {}
  for pixels in order:
    name = "rendered" if pixels == RENDERED else "held"
    summary = train(args, args.study_config_text,
                    os.path.join(out_dir, f"round{r + 1}_{name}"), pixels)
    runs[name] = summary["examples_per_second"]
  return {"order": ["held" if p == HELD else "rendered" for p in order], "examples_per_second": runs,
          "rendered_over_held": runs["rendered"] / runs["held"]}


def targets(memory, ratio):
  rendered = sorted((m for m in memory if m["pixels"] == "rendered"),
                    key=lambda m: m["identities"])
  small, large = rendered[0], rendered[-1]
  per_receipt = ((large["peak_rss_bytes"] - small["peak_rss_bytes"]) /
                 (large["identities"] - small["identities"]))
  return [
      support.target(f"peak RSS per rank, pixels rendered: bytes per receipt from "
                     f"{small['identities']} to {large['identities']}", per_receipt, "<=",
                     BYTES_PER_RECEIPT_TARGET),
      support.target("study config examples/s, rendered over held (median of rounds)", ratio,
                     ">=", THROUGHPUT_TARGET),
  ]


def main(argv):
  args = parse(argv)
  args.train = os.path.abspath(args.train)
  out_dir = support.out_folder(args.out, "receipt_memory")
  load_before = support.load_average()
  memory = [memory_run(args, out_dir, size, pixels)
            for size in args.sizes for pixels in (RENDERED, HELD)]
  rounds = [throughput_round(args, out_dir, r) for r in range(args.rounds)]
  ratio = statistics.median(r["rendered_over_held"] for r in rounds)
  checks = targets(memory, ratio)
  print(f"receipts in memory, {args.config} at {args.sizes} identities, and "
        f"{args.study_config} over {args.rounds} rounds; load average before {load_before}")
  print(f"  {'identities':>10} {'pixels':>9} {'peak MB per rank':>20} {'examples/s':>11}")
  for m in memory:
    peaks = " / ".join(f"{p / 1e6:.0f}" for p in m["peak_rss_bytes_per_rank"])
    print(f"  {m['identities']:>10} {m['pixels']:>9} {peaks:>20} "
          f"{m['examples_per_second']:>11.0f}")
  for i, r in enumerate(rounds):
    print(f"  round {i + 1}: study examples/s held {r['examples_per_second']['held']:.0f}, "
          f"rendered {r['examples_per_second']['rendered']:.0f} "
          f"({r['rendered_over_held']:.3f}x)")
  support.print_targets(checks)
  support.write_report(out_dir, "receipt_memory.json", {
      "config": args.config, "study_config": args.study_config, "memory": memory,
      "rounds": rounds, "rendered_over_held_median": ratio, "targets": checks,
      "load_average_before": load_before})


if __name__ == "__main__":
  main(sys.argv[1:])
