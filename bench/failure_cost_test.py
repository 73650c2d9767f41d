#!/usr/bin/python3
"""//bench:failure_cost at a small size: one round at two workers runs the
three ways, both runs with a kill end on the uninterrupted run's bits (the
benchmark checks it), the going-on run records its change and the restart
ends its attempt, the report holds both targets, and bad flags exit 2. No
timing is asserted beyond the order of events (a stall is positive).

Arguments: the failure_cost script, the train binary.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT, TRAIN = (os.path.abspath(p) for p in sys.argv[1:3])
del sys.argv[1:3]


class FailureCostTest(unittest.TestCase):

  def test_one_round_at_two_workers(self):
    out = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "out")
    result = subprocess.run(
        [SCRIPT, TRAIN, "--config=configs/world_size_change.pbtxt", f"--out={out}",
         "--rounds=1", "--world_sizes=2", "--kill_update=12",
         "--set", "global_batch=24", "--set", "epochs=8"],
        capture_output=True, text=True, timeout=900)
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr[-3000:])
    with open(os.path.join(out, "failure_cost.json")) as f:
      report = json.load(f)
    runs = report["rounds"][0]["2"]["runs"]
    self.assertEqual(set(runs), {"uninterrupted", "going_on", "restart",
                                 "uninterrupted_not_ready"})
    self.assertEqual(runs["uninterrupted_not_ready"]["hash"], runs["uninterrupted"]["hash"])
    self.assertIn("ready to go on / not ready", result.stdout)
    self.assertEqual(runs["going_on"]["outcome"], "survivors_went_on")
    # At most the update in flight: 0 when the survivors had finished it
    # before the loss reached them (the killed rank had sent its part).
    self.assertIn(runs["going_on"]["updates_redone"], (0, 1))
    self.assertEqual(runs["restart"]["outcome"], "attempt_ended")
    for way in ("going_on", "restart"):
      self.assertEqual(runs[way]["hash"], runs["uninterrupted"]["hash"], way)
      self.assertGreater(runs[way]["stall_seconds"], 0, way)
      self.assertAlmostEqual(runs[way]["lost_seconds"], runs[way]["stall_seconds"] -
                             2 * runs["uninterrupted"]["update_seconds"])
    self.assertGreater(runs["uninterrupted"]["update_seconds"], 0)
    self.assertEqual(len(report["targets"]), 2)
    for t in report["targets"]:
      self.assertIn("MET " if t["met"] else "MISSED ", result.stdout)

  def test_bad_flags_exit_2(self):
    for flags, says in ((["--rounds=0"], "--rounds"), (["--world_sizes=1"], "--world_sizes"),
                        (["--world_sizes=two"], "--world_sizes"),
                        (["--kill_update=0"], "--kill_update"),
                        (["--config=/nonexistent.pbtxt"], "--config")):
      result = subprocess.run([SCRIPT, TRAIN, *flags], capture_output=True, text=True)
      self.assertEqual(result.returncode, 2, (flags, result.stderr))
      self.assertIn(says, result.stderr)


if __name__ == "__main__":
  unittest.main()
