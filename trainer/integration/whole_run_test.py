#!/usr/bin/python3
"""The whole-run parity verdict (issue 25, item 4), through the REAL train
binary and real worker processes: a two-worker run is judged after its
first update, its last and three between against a whole one-worker
reference, within a drift budget its drift twin measured; a mistake that
shows only after the first update fails the whole run; a first update that
fails parity stops the run there (parity.stop_on_failure) and a rerun says
so again; checked updates beyond the run are refused naming the field.

Arguments: //trainer:train, then //trainer:train_with_test_plugins (with
the test-only reducer test_late_drift)."""
import os
import sys
import unittest

import integration_support as support

WITH_TEST_PLUGINS = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None

config = support.write_config
train = support.train

LATE_DRIFT = """reducer {{ name: "test_late_drift" options {{
  [type.googleapis.com/receipt_parity.testing.LateDriftReducerOptions] {{
    from_update: {from_update} scale: {scale} }} }} }}"""


def two_workers(**kw):
  args = dict(world=2, batch=4, ids=24, epochs=2)
  args.update(kw)
  return support.small_config(**args)


def with_late_drift(text, from_update):
  """`text` (reducer allreduce_sum) with test_late_drift instead: exact
  before `from_update`, 1 % off from it."""
  return text.replace('reducer { name: "allreduce_sum" }',
                      LATE_DRIFT.format(from_update=from_update, scale=1.01))


def train_with_test_plugins(tmp, name, text):
  out = os.path.join(tmp, "out")
  return out, support.run_train_binary(WITH_TEST_PLUGINS, "--config=" + config(tmp, name, text),
                                       "--out=" + out)


def parity_of(out):
  return support.load(os.path.join(out, "parity.json"))


class WholeRunTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("whole_run")
    cls.out = os.path.join(cls.tmp, "out")
    cls.good = train(config(cls.tmp, "good", two_workers()), cls.out)

  def test_the_whole_run_is_judged_at_the_default_updates_and_passes(self):
    self.assertEqual(self.good.returncode, 0, self.good.stderr[-3000:])
    parity = parity_of(self.out)
    self.assertTrue(parity["pass"], parity["failures"])
    whole = parity["whole_run"]
    self.assertEqual(whole["mode"], "drift_budget")
    summary = support.load(os.path.join(self.out, "run_summary.json"))
    last = summary["total_updates"] - 1
    self.assertEqual(whole["check_updates"][0], 0)
    self.assertEqual(whole["check_updates"][-1], last)
    self.assertEqual(len(whole["check_updates"]), 5)
    self.assertEqual([u["update"] for u in whole["updates"]], whole["check_updates"])
    for u in whole["updates"]:
      self.assertTrue(u["pass"], u.get("failures"))
      self.assertGreater(len(u["parameters"]), 0)
      # Every tensor judged within its own budget, or listed as diverged.
      for t in u["tensors"]:
        if t.get("judged"):
          self.assertLessEqual(t["run_drift"], t["budget"])
          self.assertLessEqual(t["share_of_one_update"], 0.1)
        else:
          self.assertIn(t["name"], u["diverged_tensors"])
    self.assertTrue(whole["updates"][0]["judged"])
    # The twin summed every update over two micro-batches; its drift grew.
    self.assertEqual(whole["twin_micro_batches"], 2)
    self.assertGreater(whole["updates"][-1]["twin_drift"], 0)
    # The loss compared is the update's mean over its accepted examples,
    # both ranks' added: with global_count, the weighted loss itself.
    curve = {p["update"]: p for p in summary["loss_curve"]}
    self.assertAlmostEqual(whole["updates"][-1]["loss"], curve[last]["mean_loss"], places=12)
    self.assertAlmostEqual(curve[last]["mean_loss"], curve[last]["loss"], places=6)

  def test_the_references_hold_their_trajectories(self):
    self.assertEqual(self.good.returncode, 0, self.good.stderr[-3000:])
    checks = parity_of(self.out)["whole_run"]["check_updates"]
    for folder in ("reference", "drift_reference", ""):
      trajectory = os.path.join(self.out, folder, "trajectory")
      for u in checks:
        self.assertTrue(os.path.exists(os.path.join(trajectory, "update-%d.pt" % u)),
                        (folder, u))
    twin = support.load(os.path.join(self.out, "drift_reference", "run_manifest.json"))
    self.assertIn("drift twin", twin["purpose"])

  def test_the_console_prints_the_verdict(self):
    self.assertEqual(self.good.returncode, 0, self.good.stderr[-3000:])
    self.assertIn("parity PASSED: first update: ", self.good.stdout)
    self.assertIn("tensors judged by numerics within their derived fp32 budgets", self.good.stdout)
    self.assertIn("whole run: 5 of 5 checked updates", self.good.stdout)

  def test_a_finished_run_trains_nothing_and_leaves_its_references(self):
    self.assertEqual(self.good.returncode, 0, self.good.stderr[-3000:])
    pt = os.path.join(self.out, "drift_reference", "trajectory", "update-0.pt")
    before = os.stat(pt).st_mtime_ns
    again = train(os.path.join(self.tmp, "good.pbtxt"), self.out)
    self.assertEqual(again.returncode, 0, again.stderr[-3000:])
    self.assertIn("nothing to train", again.stdout)
    self.assertEqual(os.stat(pt).st_mtime_ns, before)

  def test_chosen_check_updates_are_judged(self):
    tmp = support.temp_dir("chosen")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "chosen", two_workers(extra="parity { check_updates: [7, 3] }")),
                   out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    whole = parity_of(out)["whole_run"]
    self.assertEqual(whole["check_updates"], [0, 3, 7])
    self.assertTrue(whole["pass"], whole)

  def test_check_updates_beyond_the_run_are_refused_naming_the_field(self):
    tmp = support.temp_dir("beyond")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "beyond", two_workers(extra="parity { check_updates: [100] }")),
                   out)
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn("parity.check_updates: update 100 is beyond the run", result.stderr)
    self.assertFalse(os.path.exists(os.path.join(out, "run_state.json")))
    negative = train(config(tmp, "negative", two_workers(extra="parity { check_updates: [-1] }")),
                     out)
    self.assertEqual(negative.returncode, 2, negative.stderr[-3000:])
    self.assertIn("parity.check_updates: -1 is not an update", negative.stderr)


class LateMistakeTest(unittest.TestCase):
  """A test-only reducer exact at the first update and 1 % off from update
  2: the every-update reduction check stops it at update 2; with the
  checks off, the whole-run verdict still fails it."""

  def late_drift(self, extra=""):
    return with_late_drift(two_workers(reducer="allreduce_sum", extra=extra), 2)

  def test_the_every_update_checks_stop_a_late_mistake_at_its_update(self):
    out, result = train_with_test_plugins(support.temp_dir("late_checked"), "late",
                                          self.late_drift())
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    every = parity_of(out)["every_update"]
    self.assertEqual((every["updates"], every["verified"]), (3, 2))
    self.assertEqual(every["first_failure"]["update"], 2)
    self.assertEqual(every["first_failure"]["check"], "reduction")
    self.assertIn("update 2 failed the reduction check", result.stderr)

  def test_a_mistake_after_the_first_update_fails_the_whole_run(self):
    out, result = train_with_test_plugins(support.temp_dir("late"), "late",
                                          self.late_drift("parity { every_update: false }"))
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    parity = parity_of(out)
    # The first update is exact; the run trained to its end.
    self.assertTrue(all(g["pass"] for g in parity["gradients"]))
    whole = parity["whole_run"]
    self.assertFalse(whole["pass"])
    self.assertTrue(whole["updates"][0]["pass"])
    self.assertFalse(whole["updates"][-1]["pass"])
    self.assertIn("beyond its budget", whole["updates"][-1]["failures"][0])
    self.assertTrue(any(f.startswith("whole run:") for f in parity["failures"]))
    # The replay recomputes the checked updates with the reducer's sum: the
    # late ones differ from the run.
    self.assertFalse(parity["replay"]["pass"])
    self.assertIn("parity FAILED: first update: ", result.stderr)


class LongRunTest(unittest.TestCase):
  """Two workers, masked_tail, global_count, allreduce_sum, fp32, the small
  CNN, 40 epochs of 60 updates: 2,400 updates. Rounding alone diverges two
  reduction orders over such a run; a correct run must pass, and a rule
  that goes wrong only late must still fail."""

  LONG = dict(ids=320, world=2, batch=4, epochs=40)

  def test_a_correct_run_of_2400_updates_passes(self):
    tmp = support.temp_dir("long")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "long", support.small_config(**self.LONG)), out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = parity_of(out)
    self.assertTrue(parity["pass"], parity["failures"])
    self.assertEqual(parity["every_update"]["verified"], 2400)
    whole = parity["whole_run"]
    self.assertEqual(whole["check_updates"], [0, 599, 1199, 1799, 2399])
    # Update 0 is judged tensor by tensor; a later update whose tensors the
    # twin's rounding has diverged is listed so, its loss still judged.
    self.assertTrue(whole["updates"][0]["judged"])
    for u in whole["updates"]:
      self.assertTrue(u["pass"], u)
      self.assertLessEqual(u["loss_diff"], u["loss_budget"])
      if not u["judged"]:
        self.assertIn("diverged", u["not_judged"])
        self.assertEqual(len(u["diverged_tensors"]), len(u["tensors"]))
    # The exact layers hold at the late updates: replayed bit for bit.
    replay = parity["replay"]
    self.assertEqual(replay["bitwise_updates"], 5)
    self.assertTrue(replay["pass"])

  def late_drift(self, extra=""):
    return with_late_drift(support.small_config(reducer="allreduce_sum", extra=extra, **self.LONG),
                           2000)

  def test_a_rule_wrong_only_after_update_2000_fails_at_it(self):
    out, result = train_with_test_plugins(support.temp_dir("long_late"), "late",
                                          self.late_drift())
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    every = parity_of(out)["every_update"]
    self.assertEqual(every["first_failure"]["update"], 2000)
    self.assertEqual(every["first_failure"]["check"], "reduction")

  def test_without_the_every_update_checks_the_replay_fails_it(self):
    out, result = train_with_test_plugins(support.temp_dir("long_late_unchecked"), "late",
                                          self.late_drift("parity { every_update: false }"))
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    replay = parity_of(out)["replay"]
    failing = [u["update"] for u in replay["updates"] if not u["pass"]]
    self.assertEqual(failing, [2399])  # the checked updates before 2000 replay exactly
    self.assertIn("replay:", result.stderr)


class StopOnFailureTest(unittest.TestCase):

  WRONG = dict(weighting="rank_mean", reducer="rank_average",
               extra="local_batch_sizes: [3, 1]")

  def test_a_failed_first_update_stops_the_run_there(self):
    tmp = support.temp_dir("stop")
    out = os.path.join(tmp, "out")
    wrong = config(tmp, "wrong", two_workers(**self.WRONG))
    result = train(wrong, out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    self.assertIn("parity.stop_on_failure stops the run", result.stderr)
    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(summary["total_updates"], 1)
    self.assertEqual(support.load(os.path.join(out, "finished.json"))["stopped_by"],
                     "parity_failed")
    parity = parity_of(out)
    self.assertFalse(parity["pass"])
    self.assertEqual(parity["whole_run"]["mode"], "not_judged")
    self.assertIn("stop_on_failure", parity["whole_run"]["not_judged"])
    # Run again: the same verdict, nothing trained.
    again = train(wrong, out)
    self.assertEqual(again.returncode, 3, again.stderr[-3000:])
    self.assertIn("nothing to train", again.stdout)

  def test_without_stop_on_failure_the_run_trains_every_update(self):
    tmp = support.temp_dir("no_stop")
    out = os.path.join(tmp, "out")
    wrong = dict(self.WRONG)
    wrong["extra"] += "\nparity { stop_on_failure: false }"
    result = train(config(tmp, "wrong", two_workers(**wrong)), out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertGreater(summary["total_updates"], 1)
    self.assertEqual(support.load(os.path.join(out, "finished.json"))["stopped_by"], "epochs")
    self.assertFalse(parity_of(out)["whole_run"]["pass"])


if __name__ == "__main__":
  unittest.main()
