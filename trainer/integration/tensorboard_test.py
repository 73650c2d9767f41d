#!/usr/bin/python3
"""Issue 30: rank 0's curves in DIR/tensorboard/, read back by TensorBoard's
own reader (the project's venv's `tensorboard` package) and checked against
the run's run_summary.json and validation.json.

Arguments: the train binary, read_tensorboard.py, the venv's Python.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import unittest

import integration_support as support

READER = os.path.abspath(sys.argv.pop(1))
TORCH_PYTHON = os.path.abspath(sys.argv.pop(1))


def read_curves(out):
  """TensorBoard's view of OUT/tensorboard ("scalars") and each file's raw
  events ("files")."""
  result = subprocess.run([TORCH_PYTHON, READER, os.path.join(out, "tensorboard")],
                          capture_output=True, text=True, timeout=120)
  if result.returncode != 0:
    raise AssertionError("read_tensorboard.py failed: " + result.stderr[-3000:])
  return json.loads(result.stdout)


def checkpointed(max_updates):
  return support.small_config(world=2, epochs=100,
                              run_extra="max_updates: %d" % max_updates) + (
                                  "checkpoint { every_updates: 3 }\n")


class TensorBoardTest(unittest.TestCase):

  def setUp(self):
    self.tmp = support.temp_dir("tensorboard")

  def train(self, config, out):
    result = support.train(config, out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])

  def assertCurve(self, scalars, tag, expected):
    """TensorBoard's curve `tag` is exactly {step: value} `expected` (float32)."""
    self.assertIn(tag, scalars)
    got = {step: value for step, _, value in scalars[tag]}
    self.assertEqual(len(got), len(scalars[tag]), tag + ": a step shown twice")
    self.assertEqual(sorted(got), sorted(expected), tag)
    for step, value in expected.items():
      self.assertAlmostEqual(got[step], value, delta=1e-6 * max(1.0, abs(value)),
                             msg="%s at step %d" % (tag, step))

  def test_two_workers_curves_are_the_run_summarys(self):
    config = support.write_config(self.tmp, "two", support.small_config(world=2, epochs=2))
    out = os.path.join(self.tmp, "two")
    self.train(config, out)
    summary = support.load(os.path.join(out, "run_summary.json"))
    validation = support.load(os.path.join(out, "validation.json"))
    scalars = read_curves(out)["scalars"]
    curve = summary["loss_curve"]
    self.assertGreater(len(curve), 4)
    self.assertCurve(scalars, "train/loss", {p.get("update", 0): p["loss"] for p in curve})
    self.assertCurve(scalars, "train/learning_rate",
                     {p.get("update", 0): p["learning_rate"] for p in curve})
    self.assertCurve(scalars, "train/gradient_norm",
                     {p.get("update", 0): p["gradient_norm"] for p in curve})
    self.assertCurve(scalars, "train/mean_loss",
                     {p.get("update", 0): p["mean_loss"] for p in curve if "mean_loss" in p})
    # Timed updates: after the warm-up, the slowest rank's seconds.
    warmup = summary["warmup_updates"]
    timing = summary["timing"]
    timed = min(len(t["update_seconds"]) for t in timing)
    self.assertGreater(timed, 0)
    seen = [0] + [p["examples_seen"] for p in curve]
    rate, share, check_share = {}, {}, {}
    lateness = {t.get("rank", 0): {} for t in timing}
    for i in range(timed):
      u = warmup + i
      slowest = max(t["update_seconds"][i] for t in timing)
      longest = max(t["sync_seconds"][i] for t in timing)
      rate[u] = (seen[u + 1] - seen[u]) / slowest
      share[u] = longest / slowest
      check_share[u] = max(t["check_seconds"][i] for t in timing) / slowest
      for t in timing:
        lateness[t.get("rank", 0)][u] = longest - t["sync_seconds"][i]
    self.assertCurve(scalars, "throughput/examples_per_second", rate)
    self.assertCurve(scalars, "throughput/sync_share", share)
    self.assertCurve(scalars, "throughput/check_share", check_share)
    # Measured by the run, more than nothing; the last update's reports
    # cross the ranks in a gather of their own (no next update carries
    # them), so only the others are below their update's time for sure.
    self.assertTrue(all(v > 0 for v in check_share.values()))
    self.assertTrue(all(v < 1 for u, v in check_share.items() if u < max(check_share)))
    # Every update verified: the checks' curve is 1 at every update.
    self.assertCurve(scalars, "checks/every_update_verified",
                     {p.get("update", 0): 1.0 for p in curve})
    self.assertTrue(all(p["verified"] for p in curve))
    self.assertEqual(sorted(lateness), [0, 1])
    for rank, values in lateness.items():
      self.assertCurve(scalars, "lateness/rank_%d" % rank, values)
    step = validation["update"]
    self.assertEqual(step, summary["total_updates"])
    self.assertCurve(scalars, "validation/accuracy", {step: validation["accuracy"]})
    self.assertCurve(scalars, "validation/macro_f1", {step: validation["macro_f1"]})
    self.assertGreater(len(validation["per_class"]), 1)
    for c in validation["per_class"]:
      for metric in ("precision", "recall", "f1"):
        self.assertCurve(scalars, "validation/%s/%s" % (c["label"], metric),
                         {step: c.get(metric, 0.0)})

  def test_a_continued_run_shows_a_redone_update_once(self):
    """Four updates with a generation every three, then eight: attempt 2
    resumes from the generation after update 2 and redoes update 3, which
    attempt 1's file already holds. TensorBoard shows every step once, the
    redone one from attempt 2 (its restart marker purges the older)."""
    out = os.path.join(self.tmp, "continued")
    self.train(support.write_config(self.tmp, "four", checkpointed(4)), out)
    first = support.load(os.path.join(out, "run_summary.json"))
    self.train(support.write_config(self.tmp, "eight", checkpointed(8)), out)
    second = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(second["first_update"], 3)
    self.assertEqual(second["total_updates"], 8)
    curves = read_curves(out)
    files = list(curves["files"].values())
    names = list(curves["files"])
    self.assertEqual(len(files), 2, names)
    self.assertIn("attempt-00001", names[0])
    self.assertIn("attempt-00002", names[1])
    for events in files:
      self.assertEqual(events[0].get("file_version"), "brain.Event:2")
    # Each file restarts at its first update; both hold update 3's loss.
    self.assertEqual((files[0][1]["session_log"], files[0][1]["step"]), (1, 0))
    self.assertEqual((files[1][1]["session_log"], files[1][1]["step"]), (1, 3))
    raw_loss = [[e["step"] for e in events if e.get("tag") == "train/loss"] for events in files]
    self.assertEqual(raw_loss, [[0, 1, 2, 3], [3, 4, 5, 6, 7]])
    scalars = curves["scalars"]
    expected = {p.get("update", 0): p["loss"] for p in first["loss_curve"]}
    expected.update({3 + p.get("update", 0): p["loss"] for p in second["loss_curve"]})
    self.assertCurve(scalars, "train/loss", expected)
    second_wall = files[1][0]["wall_time"]
    shown = {step: wall for step, wall, _ in scalars["train/loss"]}
    self.assertEqual(shown[3], second_wall)
    self.assertNotEqual(shown[2], second_wall)
    # Attempt 1 validated after update 4, a step the restart at 3 covers:
    # TensorBoard drops it with the rest; attempt 2's, after update 8, stays.
    self.assertEqual([e["step"] for e in files[0] if e.get("tag") == "validation/accuracy"], [4])
    self.assertEqual([s for s, _, _ in scalars["validation/accuracy"]], [8])

  def test_a_preempted_attempts_curves_are_kept(self):
    """SIGTERM to rank 0 during update 4 of 8: the attempt stops at an
    update boundary, saves there, exits 4 and writes its curves (no
    validation: it validated nothing); the resumed run's curves continue
    them, so TensorBoard shows every update once, each the uninterrupted
    run's loss."""
    config = support.write_config(self.tmp, "eight", checkpointed(8))
    whole = os.path.join(self.tmp, "whole")
    self.train(config, whole)
    out = os.path.join(self.tmp, "preempted")
    stopped = support.train(config, out, "--kill_rank=0", "--kill_phase=forward_backward",
                            "--kill_update=4", "--kill_signal=SIGTERM")
    self.assertEqual(stopped.returncode, 4, stopped.stderr[-3000:])
    self.train(config, out)
    curves = read_curves(out)
    files = list(curves["files"].values())
    self.assertEqual(len(files), 2, list(curves["files"]))
    stop = support.load(os.path.join(out, "run_summary.json"))["first_update"]
    self.assertGreaterEqual(stop, 4)
    self.assertEqual([e["step"] for e in files[0] if e.get("tag") == "train/loss"],
                     list(range(stop)))
    self.assertFalse([e for e in files[0] if e.get("tag", "").startswith("validation/")])
    expected = {p.get("update", 0): p["loss"]
                for p in support.load(os.path.join(whole, "run_summary.json"))["loss_curve"]}
    self.assertEqual(sorted(expected), list(range(8)))
    self.assertCurve(curves["scalars"], "train/loss", expected)

  def test_a_fresh_start_replaces_the_curves_and_a_link_out_is_refused(self):
    out = os.path.join(self.tmp, "fresh")
    config = support.write_config(self.tmp, "fresh", checkpointed(4))
    self.train(config, out)
    self.assertEqual(support.train(config, out, "--overwrite").returncode, 0)
    files = glob.glob(os.path.join(out, "tensorboard", "*tfevents*"))
    self.assertEqual(len(files), 1, files)
    # DIR/tensorboard linked outside the run folder: refused at the start,
    # naming it, and nothing written where it points.
    elsewhere = os.path.join(self.tmp, "curves_elsewhere")
    shutil.move(os.path.join(out, "tensorboard"), elsewhere)
    os.symlink(elsewhere, os.path.join(out, "tensorboard"))
    before = sorted(os.listdir(elsewhere))
    refused = support.train(support.write_config(self.tmp, "more", checkpointed(8)), out)
    self.assertEqual(refused.returncode, 2, refused.stderr[-3000:])
    self.assertIn(os.path.join(out, "tensorboard") + " is a link to", refused.stderr)
    self.assertEqual(sorted(os.listdir(elsewhere)), before)


if __name__ == "__main__":
  unittest.main()
