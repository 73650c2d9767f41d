#!/usr/bin/python3
"""//bench:dedup_scaling at small sizes: both merges run at every size on a
real Gloo group of worker processes, the report has each run's figures and
the two targets, and bad flags and a failing rank are refused. No timing is
asserted.

Arguments: the dedup_scaling script, the dedup worker binary.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT, WORKER = (os.path.abspath(p) for p in sys.argv[1:3])
del sys.argv[1:3]


class DedupScalingTest(unittest.TestCase):

  def test_prints_and_writes_both_merges_at_every_size(self):
    out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    result = subprocess.run(
        [SCRIPT, WORKER, f"--out={out}", "--predictions=50000,20000", "--world_size=3",
         "--chunk_rows=100"], capture_output=True, text=True, timeout=240)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn("validation dedup, 3 ranks", result.stdout)
    with open(os.path.join(out, "dedup_scaling.json")) as f:
      report = json.load(f)
    self.assertEqual([(r["predictions"], r["merge"]) for r in report["runs"]],
                     [(20000, "streamed"), (20000, "gathered"),
                      (50000, "streamed"), (50000, "gathered")])
    for r in report["runs"]:
      # 1 % of the predictions are second copies: each counted once.
      self.assertEqual(r["duplicates_dropped"], r["predictions"] // 100)
      self.assertEqual(r["unique_ids_counted"], r["predictions"] - r["predictions"] // 100)
      self.assertGreater(r["seconds"], 0)
      self.assertGreater(r["ranks_peak_rss_sum_bytes"], 0)
      if r["merge"] == "streamed":
        self.assertGreater(r["peak_held"], 0)
        self.assertLessEqual(r["peak_held"], 3 * 100 + 2)
      else:
        self.assertEqual(r["peak_held"], 0)
    self.assertEqual(report["gathered_skipped"], [])
    self.assertEqual(len(report["targets"]), 2)
    for t in report["targets"]:
      self.assertEqual(t["met"], t["measured"] <= t["threshold"], t)
      self.assertIn("MET " if t["met"] else "MISSED ", result.stdout)

  def test_bad_flags_exit_2(self):
    for flags in (["--predictions=abc"], ["--predictions=0"], ["--world_size=0"],
                  ["--chunk_rows=0"]):
      result = subprocess.run([SCRIPT, WORKER, *flags], capture_output=True, text=True)
      self.assertEqual(result.returncode, 2, (flags, result.stderr))
      self.assertIn(flags[0].split("=")[0], result.stderr)

  def test_the_worker_refuses_bad_flags_and_a_missing_group(self):
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    result = subprocess.run([WORKER, "--merge=sorted"], capture_output=True, text=True, env=env)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("--merge gathered or streamed", result.stderr)
    result = subprocess.run([WORKER], capture_output=True, text=True, env=env)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("run it under bench/dedup_scaling.py", result.stderr)

  def test_the_worker_exits_1_when_its_group_never_forms(self):
    # Rank 1 of 2, and no rank 0 hosting the store.
    env = dict(os.environ, RANK="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT="1")
    result = subprocess.run([WORKER, "--timeout_seconds=2"], capture_output=True, text=True,
                            env=env, timeout=60)
    self.assertEqual(result.returncode, 1, result.stderr)

  def test_a_failing_rank_stops_the_benchmark_naming_it(self):
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    failing = os.path.join(tmp, "failing_worker.sh")
    with open(failing, "w") as f:
      f.write('#!/bin/sh\n[ "$RANK" = 2 ] && { echo "rank two broke" >&2; exit 1; }\n'
              'echo \'{"seconds": 1}\'\n')
    os.chmod(failing, 0o755)
    result = subprocess.run([SCRIPT, failing, f"--out={tmp}", "--predictions=10",
                             "--world_size=3"], capture_output=True, text=True, timeout=60)
    self.assertEqual(result.returncode, 1, result.stderr)
    self.assertIn("rank two broke", result.stderr)
    self.assertIn("rank 2 of the streamed count of 10 predictions exited 1", result.stderr)


if __name__ == "__main__":
  unittest.main()
