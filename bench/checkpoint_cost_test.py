#!/usr/bin/python3
"""//bench:checkpoint_cost at a tiny size on a small two-worker config:
every round runs the three variants, the report has their figures, ratios
and both targets, and bad flags and a config without the lines it replaces
exit 2, a failing run 1. No timing is asserted.

Arguments: the checkpoint_cost script, the train binary.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT, TRAIN = (os.path.abspath(p) for p in sys.argv[1:3])
del sys.argv[1:3]
sys.path.insert(0, os.path.join(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"], "trainer", "integration"))
import integration_support as support  # pylint: disable=wrong-import-position


class CheckpointCostTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    # small_config's run block on one line, and a checkpoint line to replace.
    cls.config = support.write(os.path.join(cls.tmp, "base.pbtxt"), support.small_config(
        world=2, epochs=2, extra="checkpoint { every_updates: 5 }"))

  def test_three_variants_per_round_and_both_targets(self):
    out = os.path.join(self.tmp, "out")
    result = subprocess.run([SCRIPT, TRAIN, f"--config={self.config}", f"--out={out}",
                             "--rounds=2", "--every=2", "--updates=6"],
                            capture_output=True, text=True, timeout=600)
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    with open(os.path.join(out, "checkpoint_cost.json")) as f:
      report = json.load(f)
    self.assertEqual(len(report["rounds"]), 2)
    # The order rotates, so no variant always runs first.
    self.assertNotEqual(report["rounds"][0]["order"][0], report["rounds"][1]["order"][0])
    for r in report["rounds"]:
      runs = r["runs"]
      self.assertEqual(set(runs), {"no_saving", "sync", "async"})
      self.assertEqual(runs["no_saving"]["generations_saved"], 0)
      self.assertEqual(runs["sync"]["generations_saved"], 3)
      self.assertEqual(runs["async"]["generations_saved"], 3)
      for run in runs.values():
        self.assertGreater(run["examples_per_second_with_saves"], 0)
      self.assertAlmostEqual(r["ratios"]["async_blocked_vs_sync_save"],
                             runs["async"]["blocked_seconds_median"] /
                             runs["sync"]["save_seconds_median"])
      # A synchronous save blocks the loop for all of itself.
      self.assertAlmostEqual(runs["sync"]["blocked_seconds_median"],
                             runs["sync"]["save_seconds_median"])
    self.assertEqual(len(report["targets"]), 2)
    for t in report["targets"]:
      self.assertEqual(t["met"], t["measured"] <= t["threshold"], t)
      self.assertIn("MET " if t["met"] else "MISSED ", result.stdout)

  def test_bad_flags_and_configs_exit_2(self):
    lacking = support.write(os.path.join(self.tmp, "lacking.pbtxt"),
                            support.small_config(world=2))  # no checkpoint line
    for flags, says in ((["--rounds=0"], "--rounds"), (["--every=4", "--updates=6"], "--updates"),
                        ([f"--config={lacking}"], "checkpoint"),
                        (["--config=/nonexistent.pbtxt"], "--config")):
      result = subprocess.run([SCRIPT, TRAIN, *flags], capture_output=True, text=True)
      self.assertEqual(result.returncode, 2, (flags, result.stderr))
      self.assertIn(says, result.stderr)

  def test_a_failing_run_exits_1_naming_it(self):
    broken = support.write(os.path.join(self.tmp, "broken.pbtxt"), support.small_config(
        world=2, extra="checkpoint { every_updates: 5 }").replace("global_batch: 4",
                                                                  "global_batch: 0"))
    result = subprocess.run([SCRIPT, TRAIN, f"--config={broken}",
                             f"--out={os.path.join(self.tmp, 'broken')}", "--rounds=1",
                             "--every=2", "--updates=4"], capture_output=True, text=True,
                            timeout=120)
    self.assertEqual(result.returncode, 1, result.stderr)
    self.assertIn("checkpoint_cost: the no_saving run exited 2", result.stderr)


if __name__ == "__main__":
  unittest.main()
