#!/usr/bin/python3
"""What a lost rank costs (issue 50): the survivors going on (and a
replacement joining from memory) against today's restart from the last
generation.

For each world size, in each round, in an order that rotates from round
to round, trains one config three ways in fresh run folders: uninterrupted;
with the last rank SIGKILLed inside the reduction of update K
(`--kill_phase=allreduce`), the survivors going on (run { survivors_go_on:
true }, replacements as the config says; the default replaces); and with
the same kill and survivors_go_on: false, where the attempt ends and the
same command, run again at once, resumes from the newest generation.

The time lost per failure: from the kill (the killed rank's "fault
injection: ... kills itself" line) to the writer's line for update K+2
(glog's timestamps; the restart's line is in the second command's log),
less the two updates the uninterrupted run takes for K+1 and K+2 (its
median update). Update K+2 is the first that needs the recovered group:
the one in flight, K+1, is either finished by the survivors before the
loss reaches them (the killed rank had sent its part) or redone. Both runs must end with the
uninterrupted run's final_parameter_hash, or the benchmark exits 1. A
fourth run, uninterrupted with survivors_go_on: false, gives what being
ready to go on costs a run without a failure (examples/s, reported).

Targets, per world size (the medians over the rounds): the restart's time
lost at least 5x the going-on time lost; and the going-on time lost at
most one update (the uninterrupted run's median update) plus the
detection and re-forming time membership.json records for the change. Prints each run's
figures and the targets; writes DIR/failure_cost.json. Run it on an
otherwise idle machine, with the optimised build:

  bazel run --config=bench //bench:failure_cost -- --out=DIR

Usage: failure_cost.py TRAIN [--config=PBTXT] [--out=DIR] [--rounds=R]
  [--world_sizes=2,4] [--kill_update=K] [--set FIELD=VALUE ...]
The config's policies must ignore the world size (global_batches,
global_count, ordered_sum or allreduce_sum) and its global batch split
evenly at every world size the run passes through. Exit 0 once every run
ran (targets met or not), 2 for bad flags, 1 when a run fails or ends on
other bits.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_support as support  # pylint: disable=wrong-import-position

RATIO_TARGET = 5.0
WAYS = ("uninterrupted", "going_on", "restart")
# The uninterrupted run once more with survivors_go_on: false: what being
# ready to go on costs a run without a failure (the membership gate's
# all-reduce after every update), reported beside the targets.
NOT_READY = "uninterrupted_not_ready"
# glog's prefix: severity, [YYYY]MMDD, time with microseconds.
STAMP = re.compile(r"^[IWEF](\d{4})?(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})")


def parse(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("train")
  parser.add_argument("--config", default="configs/world_size_change.pbtxt")
  parser.add_argument("--out", default="")
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--world_sizes", default="2,4")
  # Two updates after a generation (every_updates: 5): the restart redoes
  # the two and the one in flight, about what a random moment costs.
  parser.add_argument("--kill_update", type=int, default=62)
  # The study's config, made long enough and split evenly at 1 to 4
  # workers (24 receipts an update: 12 chunks of 2).
  parser.add_argument("--set", action="append", dest="sets", default=None)
  args = parser.parse_args(argv)
  if args.sets is None:
    args.sets = ["global_batch=24", "epochs=30"]
  if args.rounds < 1:
    parser.error(f"--rounds={args.rounds}: must be >= 1")
  if args.kill_update < 1:
    parser.error(f"--kill_update={args.kill_update}: must be >= 1")
  try:
    args.world_size_list = [int(w) for w in args.world_sizes.split(",")]
  except ValueError:
    parser.error(f"--world_sizes={args.world_sizes}: must be integers separated by commas")
  if not args.world_size_list or min(args.world_size_list) < 2:
    parser.error(f"--world_sizes={args.world_sizes}: every world size must be >= 2")
  if not os.path.isfile(args.config):
    parser.error(f"--config={args.config}: no such file")
  return args


def stamp_seconds(line):
  """Seconds since 2000 of a glog line; None for another line."""
  m = STAMP.match(line)
  if not m:
    return None
  year = int(m.group(1)) if m.group(1) else 2000
  month, day, hour, minute, second, micros = (int(g) for g in m.groups()[1:])
  when = datetime.datetime(year, month, day, hour, minute, second, micros)
  return (when - datetime.datetime(2000, 1, 1)).total_seconds()


def first_time(log, pattern, after=None):
  """The time of the first line of `log` matching `pattern` (at or after
  `after`); None when there is none."""
  with open(log, errors="replace") as f:
    for line in f:
      if re.search(pattern, line):
        t = stamp_seconds(line)
        if t is not None and (after is None or t >= after):
          return t
  return None


def update_times(log, planned):
  """The writer's 'update N/PLANNED' lines: {N: time} (not the first-step
  reference's 'update 1/1')."""
  times = {}
  with open(log, errors="replace") as f:
    for line in f:
      m = re.search(rf"\] update (\d+)/{planned} ", line)
      t = stamp_seconds(line)
      if m and t is not None:
        times[int(m.group(1))] = t
  return times


def planned_updates(out):
  with open(os.path.join(out, "run_summary.json")) as f:
    return json.load(f)["updates"]


def train(args, world_size, out, log, *flags, extra_sets=()):
  sets = []
  for s in list(args.sets) + [f"world_size={world_size}", "run.log_every_updates=1",
                              *extra_sets]:
    sets += ["--set", s]
  # No whole-run references: they are the same for every way, and their
  # one-worker runs would share the log.
  command = [args.train, f"--config={args.config}", f"--out={out}", "--whole_run_parity=false",
             *sets, *flags]
  with open(log, "a") as f:
    return subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, timeout=1800).returncode


def final_hash(out):
  with open(os.path.join(out, "run_summary.json")) as f:
    return json.load(f)["final_parameter_hash"]


def fail(message, log):
  with open(log, errors="replace") as f:
    sys.stderr.write(f.read()[-3000:])
  sys.exit(f"failure_cost: {message}; see {log}")


def run_way(args, way, world_size, folder):
  """One way's figures: for the two with a kill, the stall and what
  membership.json says of the change."""
  out = os.path.join(folder, way)
  log = out + ".log"
  kill = [f"--kill_rank={world_size - 1}", "--kill_phase=allreduce",
          f"--kill_update={args.kill_update}"]
  if way in ("uninterrupted", NOT_READY):
    sets = ["run.survivors_go_on=false"] if way == NOT_READY else ["run.survivors_go_on=true"]
    if train(args, world_size, out, log, extra_sets=sets) != 0:
      fail(f"the {way} run at {world_size} workers failed", log)
    times = update_times(log, planned_updates(out))
    gaps = [times[n + 1] - times[n] for n in sorted(times) if n + 1 in times]
    with open(os.path.join(out, "run_summary.json")) as f:
      examples_per_second = json.load(f)["examples_per_second"]
    return {"hash": final_hash(out), "update_seconds": statistics.median(gaps),
            "examples_per_second": examples_per_second}
  if way == "going_on":
    if train(args, world_size, out, log, *kill, extra_sets=["run.survivors_go_on=true"]) != 0:
      fail(f"the going-on run at {world_size} workers failed", log)
  else:
    if train(args, world_size, out, log, *kill,
             extra_sets=["run.survivors_go_on=false"]) == 0:
      fail(f"the killed run at {world_size} workers did not stop", log)
    if train(args, world_size, out, log, extra_sets=["run.survivors_go_on=false"]) != 0:
      fail(f"the rerun at {world_size} workers failed", log)
  killed = first_time(log, r"fault injection: rank \d+ kills itself")
  recovered = first_time(log, rf"\] update {args.kill_update + 2}/", after=killed)
  if killed is None or recovered is None:
    fail(f"the {way} run at {world_size} workers lacks the kill or update "
         f"{args.kill_update + 2} after it", log)
  with open(os.path.join(out, "membership.json")) as f:
    changes = json.load(f)["changes"]
  return {"hash": final_hash(out), "stall_seconds": recovered - killed,
          "detection_seconds": changes[0].get("detection_seconds", 0),
          "reforming_seconds": changes[0].get("reforming_seconds", 0),
          "updates_redone": changes[0].get("updates_redone", 0),
          "outcome": changes[0]["outcome"],
          "joined": any(c["outcome"] == "replacement_joined" for c in changes)}


def one_round(args, r, out_dir):
  figures = {}
  for world_size in args.world_size_list:
    order = WAYS[1:][r % 2:] + WAYS[1:][:r % 2]
    folder = os.path.join(out_dir, f"round{r + 1}_w{world_size}")
    os.makedirs(folder, exist_ok=True)
    runs = {"uninterrupted": run_way(args, "uninterrupted", world_size, folder)}
    for way in list(order) + [NOT_READY]:
      runs[way] = run_way(args, way, world_size, folder)
      if way in order:
        runs[way]["lost_seconds"] = (runs[way]["stall_seconds"] -
                                     2 * runs["uninterrupted"]["update_seconds"])
      if runs[way]["hash"] != runs["uninterrupted"]["hash"]:
        sys.exit(f"failure_cost: the {way} run at {world_size} workers ended on other bits "
                 f"({runs[way]['hash']} != {runs['uninterrupted']['hash']}); see {folder}")
    figures[str(world_size)] = {"order": ["uninterrupted"] + list(order) + [NOT_READY],
                                "runs": runs,
                                "ready_vs_not_ready_examples_per_second":
                                    runs["uninterrupted"]["examples_per_second"] /
                                    runs[NOT_READY]["examples_per_second"]}
  return figures


def targets_of(rounds, world_size):
  runs = [r[world_size]["runs"] for r in rounds]
  going_on = statistics.median(x["going_on"]["lost_seconds"] for x in runs)
  restart = statistics.median(x["restart"]["lost_seconds"] for x in runs)
  bound = statistics.median(x["uninterrupted"]["update_seconds"] +
                            x["going_on"]["detection_seconds"] +
                            x["going_on"]["reforming_seconds"] for x in runs)
  return [
      support.target(f"{world_size} workers: time lost, restart / going on",
                     restart / going_on, ">=", RATIO_TARGET),
      support.target(f"{world_size} workers: time lost going on (s), at most one update plus "
                     "detection and re-forming", going_on, "<=", round(bound, 4)),
  ]


def main(argv):
  args = parse(argv)
  out_dir = support.out_folder(args.out, "failure_cost")
  args.train = os.path.abspath(args.train)
  load_before = support.load_average()
  rounds = [one_round(args, r, out_dir) for r in range(args.rounds)]
  print(f"failure cost, {args.config} ({', '.join(args.sets)}), the last rank SIGKILLed inside "
        f"update {args.kill_update + 1}'s reduction, {args.rounds} rounds; load average before "
        f"{load_before}; stall: the kill to update {args.kill_update + 2}; lost: the stall less "
        "two updates")
  print(f"  {'round':>5} {'workers':>7} {'way':>10} {'lost s':>7} {'stall s':>8} {'detect s':>8} "
        f"{'re-form s':>9} {'redone':>6} {'joined':>6} {'update s':>8}")
  targets = []
  for world_size in (str(w) for w in args.world_size_list):
    for i, r in enumerate(rounds):
      runs = r[world_size]["runs"]
      for way in WAYS[1:]:
        x = runs[way]
        print(f"  {i + 1:>5} {world_size:>7} {way:>10} {x['lost_seconds']:>7.3f} "
              f"{x['stall_seconds']:>8.3f} "
              f"{x['detection_seconds']:>8.3f} {x['reforming_seconds']:>9.3f} "
              f"{x['updates_redone']:>6} {str(x['joined']):>6} "
              f"{runs['uninterrupted']['update_seconds']:>8.4f}")
    targets += targets_of(rounds, world_size)
    ready = [r[world_size]["ready_vs_not_ready_examples_per_second"] for r in rounds]
    print(f"  {world_size} workers, no failure: examples/s ready to go on / not ready "
          f"(survivors_go_on: false): {statistics.median(ready):.3f} "
          f"({', '.join(f'{x:.3f}' for x in ready)})")
  support.print_targets(targets)
  support.write_report(out_dir, "failure_cost.json", {
      "config": args.config, "sets": args.sets, "kill_update": args.kill_update,
      "rounds": rounds, "targets": targets, "load_average_before": load_before})


if __name__ == "__main__":
  main(sys.argv[1:])
