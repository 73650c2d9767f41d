#!/usr/bin/python3
"""Resuming on another number of workers as if nothing changed (issue 28,
item 2), through the REAL train binary, real worker processes and real
checkpoints on disk: a `global_batches` run saved by 2 workers goes on with
3, then with 1, then with 2 again, without checkpoint.allow_world_size_change;
every change is said in the log and in resume.json, world_size_change.json
finds no receipt skipped or repeated, and after more than 100 updates the
run passes the whole-run parity verdict against its one-worker reference
(the uninterrupted run's) and ends where an uninterrupted two-worker run
does, within the parity tolerance. torchrun restarted with another
--nproc_per_node does the same. A run whose order depends on the world size
keeps today's rule; another global batch is refused.

Arguments: the train binary, the Python with the project's torch (torchrun)."""
import os
import subprocess
import sys
import unittest

import integration_support as support

TORCH_PYTHON = os.path.abspath(sys.argv.pop(1))

# 90 training receipts, 12 slots per update: 8 updates an epoch (the last
# one partly masked), 14 epochs: 112 updates.
UPDATES = 112
# Each attempt: (world, accumulation_steps, stop after this many updates).
ATTEMPTS = ((2, 2, 30), (3, 1, 60), (1, 3, 95), (2, 1, None))


def config(world, accumulation=1, max_updates=None, sampler="global_batches",
           weighting="global_count", batch=12, extra=""):
  run_extra = "max_updates: %d" % max_updates if max_updates else ""
  # A learning rate of 0.02: at 0.05 this small model's rounding
  # differences outgrow the drift budget by update 111 at three workers,
  # resumed or not (docs/artifacts.md, whole-run parity).
  return support.small_config(
      ids=120, batch=batch, world=world, epochs=14, sampler=sampler, weighting=weighting,
      run_extra=run_extra,
      extra="accumulation_steps: %d\ncheckpoint { every_updates: 5 keep_last: 2 }\n%s" % (
          accumulation, extra)).replace("learning_rate: 0.05", "learning_rate: 0.02")


class ResumeOnAnotherWorldSizeTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("world_size_resume")
    cls.uninterrupted = os.path.join(cls.tmp, "uninterrupted")
    cls.whole = support.train(
        support.write_config(cls.tmp, "whole", config(2)), cls.uninterrupted)
    cls.out = os.path.join(cls.tmp, "changed")
    cls.attempts = []
    for i, (world, accumulation, stop) in enumerate(ATTEMPTS):
      path = support.write_config(cls.tmp, "attempt%d" % i, config(world, accumulation, stop))
      result = support.train(path, cls.out)
      cls.attempts.append(result)
      if result.returncode != 0:
        break
      # Each attempt's records, before the next one replaces them.
      for name in ("resume.json", "world_size_change.json"):
        path = os.path.join(cls.out, name)
        if os.path.exists(path):
          os.replace(path, os.path.join(cls.tmp, "%d-%s" % (i, name)))

  def record(self, attempt, name):
    return support.load(os.path.join(self.tmp, "%d-%s" % (attempt, name)))

  def test_every_attempt_runs_without_allow_world_size_change(self):
    self.assertEqual(len(self.attempts), len(ATTEMPTS))
    for i, result in enumerate(self.attempts):
      self.assertEqual(result.returncode, 0, (i, result.stderr[-1500:]))
    for i in (1, 2, 3):
      log = self.attempts[i].stdout + self.attempts[i].stderr
      self.assertIn("WORLD SIZE CHANGED %d -> %d" % (ATTEMPTS[i - 1][0], ATTEMPTS[i][0]), log)
      self.assertIn("continues as if nothing changed", log)

  def test_resume_json_says_why_the_change_is_allowed(self):
    self.test_every_attempt_runs_without_allow_world_size_change()
    for i in (1, 2, 3):
      resume = self.record(i, "resume.json")
      self.assertTrue(resume["world_size_changed"], resume)
      self.assertEqual(resume["world_size_change_rule"], "world_size_independent")
      self.assertEqual(resume["saved_world_size"], ATTEMPTS[i - 1][0])
      self.assertEqual(resume["world_size"], ATTEMPTS[i][0])
      self.assertEqual(sum(resume["saved_local_batch_sizes"]), 12)
      self.assertEqual(resume["update"], ATTEMPTS[i - 1][2])

  def test_no_receipt_is_skipped_or_repeated(self):
    self.test_every_attempt_runs_without_allow_world_size_change()
    for i in (1, 2, 3):
      change = self.record(i, "world_size_change.json")
      self.assertEqual(change.get("skipped_ids", []), [], i)
      self.assertEqual(change.get("repeated_ids", []), [], i)
      self.assertTrue(change["same_updates"], change["summary"])
      self.assertEqual(change["new_world_size"], ATTEMPTS[i][0])

  def test_the_run_passes_whole_run_parity_and_ends_where_the_uninterrupted_run_does(self):
    self.test_every_attempt_runs_without_allow_world_size_change()
    self.assertEqual(self.whole.returncode, 0, self.whole.stderr[-3000:])
    finished = support.load(os.path.join(self.out, "finished.json"))
    self.assertEqual(finished["updates"], UPDATES)
    parity = support.load(os.path.join(self.out, "parity.json"))
    whole_run = parity["whole_run"]
    self.assertEqual(whole_run.get("not_judged", ""), "", whole_run)
    self.assertGreater(whole_run["judged_updates"], 0, whole_run)
    self.assertTrue(whole_run["pass"], whole_run)
    self.assertIn(UPDATES - 1, whole_run["check_updates"])  # the last update
    # Against the uninterrupted two-worker run: the same reference, and
    # the same final loss within the parity tolerance.
    reference = support.load(os.path.join(self.uninterrupted, "parity.json"))["whole_run"]
    self.assertTrue(reference["pass"], reference)
    ours = support.load(os.path.join(self.out, "run_summary.json"))
    theirs = support.load(os.path.join(self.uninterrupted, "run_summary.json"))
    self.assertAlmostEqual(ours["final_loss"], theirs["final_loss"],
                           delta=1e-4 * abs(theirs["final_loss"]))


class DependentRunsKeepTheRuleTest(unittest.TestCase):
  """Bad input: exit 2 naming the field."""

  def saved_by_two(self, name, **kwargs):
    tmp = support.temp_dir(name)
    out = os.path.join(tmp, "out")
    first = support.train(support.write_config(tmp, "two", config(2, max_updates=10, **kwargs)),
                          out)
    # rank_mean fails parity (exit 3) and still saves its checkpoints.
    self.assertIn(first.returncode, (0, 3), first.stderr[-3000:])
    self.assertTrue(os.path.exists(os.path.join(out, "checkpoints")))
    return tmp, out

  def test_a_world_size_dependent_sampler_is_refused_naming_it(self):
    tmp, out = self.saved_by_two("dependent", sampler="masked_tail")
    result = support.train(support.write_config(tmp, "three", config(
        3, max_updates=20, sampler="masked_tail")), out)
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn('sampler.name "masked_tail" deals its order by the world size', result.stderr)
    self.assertIn("allow_world_size_change", result.stderr)

  def test_a_split_dependent_loss_weighting_is_refused_naming_it(self):
    # global_batches with rank_mean: the order is the same, the gradient
    # is not; nothing says so unless the resume is refused.
    tmp, out = self.saved_by_two("weighting", weighting="rank_mean",
                                 extra="parity { stop_on_failure: false }")
    result = support.train(support.write_config(tmp, "three", config(
        3, max_updates=20, weighting="rank_mean", extra="parity { stop_on_failure: false }")),
        out)
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn('loss_weighting.name "rank_mean"', result.stderr)

  def test_another_global_batch_is_refused_naming_the_cursor(self):
    tmp, out = self.saved_by_two("global_batch")
    result = support.train(support.write_config(tmp, "bigger", config(
        3, max_updates=20, batch=15)), out)
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn("global_batch: 12 -> 15", result.stderr)
    self.assertIn("would not mean the same position", result.stderr)

  @staticmethod
  def rank_zero_of_three(name, text):
    """Rank 0 of `text` as a launcher that started 3 workers starts it."""
    tmp = support.temp_dir(name)
    return support.run_train(
        "--config=" + support.write_config(tmp, "two", text),
        "--out=" + os.path.join(tmp, "out"),
        env={"RANK": "0", "WORLD_SIZE": "3", "LOCAL_RANK": "0",
             "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(support.free_port())}, timeout=60)

  def test_a_launcher_with_another_world_size_is_refused_for_a_dependent_run(self):
    result = self.rank_zero_of_three("launcher", config(2, sampler="masked_tail"))
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn("WORLD_SIZE=3 but", result.stderr)
    self.assertIn('sampler.name "masked_tail"', result.stderr)

  def test_a_launcher_world_size_that_cannot_split_the_global_batch_is_refused(self):
    result = self.rank_zero_of_three("launcher_split", config(2, batch=8))
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn("global_batch", result.stderr)
    self.assertIn("on the launcher's 3 workers", result.stderr)


class TorchrunWithAnotherNprocTest(unittest.TestCase):

  def torchrun(self, nproc, config_path, out):
    return subprocess.run(
        [TORCH_PYTHON, "-m", "torch.distributed.run", "--nproc_per_node=%d" % nproc,
         "--master_port=%d" % support.free_port(), "--redirects=2", "--tee=2",
         "--no_python", support.TRAIN, "--config=" + config_path, "--out=" + out],
        capture_output=True, text=True, timeout=300)

  def test_restarting_torchrun_on_three_workers_resumes_the_two_worker_run(self):
    tmp = support.temp_dir("torchrun_nproc")
    out = os.path.join(tmp, "out")
    # One config, world_size 2; the second torchrun starts 3 workers.
    first = self.torchrun(2, support.write_config(tmp, "part", config(2, max_updates=20)), out)
    self.assertEqual(first.returncode, 0, first.stderr[-3000:])
    second = self.torchrun(3, support.write_config(tmp, "more", config(2, max_updates=40)), out)
    self.assertEqual(second.returncode, 0, second.stderr[-3000:])
    self.assertIn("WORLD_SIZE=3 from the launcher", second.stderr)
    # Survivors going on needs this binary's launcher: torchrun's start says
    # a lost rank ends the attempt (issue 50).
    self.assertIn("run.survivors_go_on does not apply: this rank was started by torchrun",
                  second.stderr)
    resume = support.load(os.path.join(out, "resume.json"))
    self.assertEqual(resume["update"], 20)
    self.assertEqual(resume["world_size"], 3)
    self.assertEqual(resume["world_size_change_rule"], "world_size_independent")
    change = support.load(os.path.join(out, "world_size_change.json"))
    self.assertTrue(change["same_updates"], change["summary"])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["whole_run"]["pass"], parity["whole_run"])
    self.assertEqual(support.load(os.path.join(out, "finished.json"))["updates"], 40)


if __name__ == "__main__":
  unittest.main()
