#!/usr/bin/python3
"""A run folder holds one run's story (docs/design.md, "Run folders"):
real runs of the train binary on one --out folder, in the orders users run
them.

Arguments: the train binary, the Python with the project's torch (torchrun).
"""
import glob
import hashlib
import os
import subprocess
import sys
import unittest

import integration_support as support

TORCH_PYTHON = os.path.abspath(sys.argv.pop(1))


def checkpointed(world, epochs=2, run_extra="", lr="0.05"):
  return support.small_config(world=world, epochs=epochs, run_extra=run_extra).replace(
      "learning_rate: 0.05", "learning_rate: " + lr) + "checkpoint { every_updates: 3 }\n"


def folder_digest(out):
  """Every file under `out` but the LOCK files (which name their last
  holder) -> (content hash, mtime)."""
  digest = {}
  for path in glob.glob(os.path.join(out, "**"), recursive=True):
    if os.path.isfile(path) and os.path.basename(path) != "LOCK":
      with open(path, "rb") as f:
        digest[os.path.relpath(path, out)] = (hashlib.sha1(f.read()).hexdigest(),
                                              os.stat(path).st_mtime_ns)
  return digest


def artifacts(folder):
  return {os.path.basename(p): support.load(p)
          for p in glob.glob(os.path.join(folder, "*.json"))}


class RunFolderStatesTest(unittest.TestCase):

  def setUp(self):
    self.tmp = support.temp_dir("states")
    self.out = os.path.join(self.tmp, "out")

  def config(self, name, text):
    return support.write(os.path.join(self.tmp, name), text)

  def train(self, config, *extra, code=0, env=None):
    result = support.run_train("--config=" + config, "--out=" + self.out, *extra, env=env)
    self.assertEqual(result.returncode, code, result.stderr[-3000:])
    return result

  def assert_one_run(self, folder, attempt):
    """Every artifact names the same run; all but the ones an earlier
    attempt wrote name `attempt`."""
    found = artifacts(folder)
    fingerprints = {name: a["config_fingerprint"] for name, a in found.items()}
    self.assertEqual(len(set(fingerprints.values())), 1, fingerprints)
    finished = found["finished.json"]
    self.assertEqual(finished["attempt"], attempt)
    for name in finished["artifacts"]:
      if name == "tensorboard":
        # One event file per attempt that finished (trainer:tensorboard_test).
        self.assertTrue(glob.glob(os.path.join(folder, name, "events.out.tfevents.*")))
        continue
      if name == "trajectory":
        # The parameters after each checked update, each point stamped.
        points = artifacts(os.path.join(folder, name))
        self.assertGreater(len(points), 0)
        for point_name, point in points.items():
          self.assertEqual(point["config_fingerprint"], set(fingerprints.values()).pop(),
                           point_name)
        continue
      self.assertIn(name, found)
      if name != "first_step.json" and not name.startswith("update-"):
        self.assertEqual(found[name]["attempt"], attempt, name)
    return found

  def test_the_readme_sequence_reference_first_then_two_workers(self):
    one = self.config("one.pbtxt", checkpointed(world=1))
    two = self.config("two.pbtxt", checkpointed(world=2))
    self.train(one)
    self.assertTrue(os.path.exists(os.path.join(self.out, "reference", "checkpoints")))
    self.assertFalse(os.path.exists(os.path.join(self.out, "checkpoints")))
    second = self.train(two)
    self.assertNotIn("making the one-worker reference", second.stderr)
    found = self.assert_one_run(self.out, 1)
    self.assertTrue(found["parity.json"]["pass"], found["parity.json"]["failures"])
    reference = self.assert_one_run(os.path.join(self.out, "reference"), 1)
    self.assertEqual(reference["run_summary.json"]["updates"],
                     found["run_summary.json"]["updates"])

  def test_a_finished_run_run_again_trains_nothing_and_touches_nothing(self):
    two = self.config("two.pbtxt", checkpointed(world=2))
    self.train(two)
    before = folder_digest(self.out)
    again = self.train(two)
    self.assertIn("this run is finished", again.stdout)
    self.assertIn("Its results are in %s/" % self.out, again.stdout)
    self.assertEqual(folder_digest(self.out), before)
    # The same for the one-worker reference run on its own folder.
    one_out = os.path.join(self.tmp, "one")
    one = self.config("one.pbtxt", checkpointed(world=1))
    self.assertEqual(support.run_train("--config=" + one, "--out=" + one_out).returncode, 0)
    before = folder_digest(one_out)
    again = support.run_train("--config=" + one, "--out=" + one_out)
    self.assertEqual(again.returncode, 0, again.stderr[-2000:])
    self.assertIn("this run is finished", again.stdout)
    self.assertEqual(folder_digest(one_out), before)

  def test_another_config_is_refused_and_overwrite_starts_afresh(self):
    two = self.config("two.pbtxt", checkpointed(world=2))
    other = self.config("other.pbtxt", checkpointed(world=2, lr="0.07"))
    self.train(two)
    old_fingerprint = support.load(os.path.join(self.out, "run_manifest.json"))[
        "config_fingerprint"]
    mine = support.write(os.path.join(self.out, "my_notes.txt"), "keep me")
    before = folder_digest(self.out)
    refused = self.train(other, code=2)
    self.assertIn("%s holds a run of another config" % self.out, refused.stderr)
    self.assertIn("optimizer.sgd.learning_rate: 0.05 -> 0.07", refused.stderr)
    self.assertIn("--overwrite", refused.stderr)
    self.assertEqual(folder_digest(self.out), before)
    overwritten = self.train(other, "--overwrite")
    self.assertIn("--overwrite: removed the run in", overwritten.stderr)
    found = self.assert_one_run(self.out, 1)
    self.assertTrue(found["parity.json"]["pass"])
    self.assertNotEqual(found["run_manifest.json"]["config_fingerprint"], old_fingerprint)
    state = support.load(os.path.join(self.out, "run_state.json"))
    self.assertEqual([a["start"] for a in state["attempts"]], ["fresh"])
    self.assertTrue(os.path.exists(mine), "--overwrite removed a file no run wrote")
    # The reference was of the old config: remade for the new one.
    self.assertEqual(
        support.load(os.path.join(self.out, "reference", "run_manifest.json"))[
            "optimizer"]["sgd"]["learning_rate"], 0.07)

  def test_a_resumed_run_leaves_one_story_with_the_first_attempts_first_step(self):
    two = self.config("two.pbtxt", checkpointed(world=2))
    killed = support.run_train("--config=" + two, "--out=" + self.out, "--kill_rank=1",
                               "--kill_point=mid_shard", "--kill_generation=2")
    self.assertEqual(killed.returncode, 1, killed.stderr[-2000:])
    self.assertFalse(os.path.exists(os.path.join(self.out, "finished.json")))
    self.assertEqual(support.load(os.path.join(self.out, "first_step.json"))["attempt"], 1)
    resumed = self.train(two)
    self.assertIn("RESUMING it as attempt 2", resumed.stderr)
    found = self.assert_one_run(self.out, 2)
    self.assertEqual(found["first_step.json"]["attempt"], 1)
    parity = found["parity.json"]
    self.assertTrue(parity["pass"], parity["failures"])
    self.assertEqual(parity["first_step_attempt"], 1)
    summary = found["run_summary.json"]
    self.assertEqual(summary["parity"], "pass")
    self.assertEqual(summary["total_updates"], summary["first_update"] + summary["updates"])
    self.assertEqual(found["validation.json"]["update"], summary["total_updates"])
    state = support.load(os.path.join(self.out, "run_state.json"))
    self.assertEqual([a["start"] for a in state["attempts"]], ["fresh", "resume"])

  def test_without_checkpoints_a_restart_says_it_starts_over_never_resuming(self):
    """Issue 26: a multi-worker run that saves no checkpoints warns at start;
    killed and run again, it says it trains again from update 0 (never
    "RESUMING"), and run_state.json records start_over; asked for more
    updates after it finished, the same."""
    plain = self.config("plain.pbtxt", support.small_config(world=2, epochs=2,
                                                            run_extra="max_updates: 6"))
    killed = support.run_train("--config=" + plain, "--out=" + self.out, "--kill_phase=allreduce",
                               "--kill_rank=1", "--kill_update=3")
    self.assertEqual(killed.returncode, 1, killed.stderr[-2000:])
    self.assertIn("saves no checkpoints (no checkpoint section): if a rank dies, a restart",
                  killed.stderr)
    restarted = self.train(plain)
    self.assertIn("nothing to resume from (this config saves no checkpoints (no checkpoint "
                  "section)): STARTING it again from update 0 as attempt 2", restarted.stderr)
    self.assertNotIn("RESUMING", restarted.stderr)
    self.assertNotIn("resumed from", restarted.stderr)
    state = support.load(os.path.join(self.out, "run_state.json"))
    self.assertEqual([a["start"] for a in state["attempts"]], ["fresh", "start_over"])
    summary = support.load(os.path.join(self.out, "run_summary.json"))
    self.assertEqual(summary["first_update"], 0)

    more = self.config("more.pbtxt", support.small_config(world=2, epochs=2,
                                                          run_extra="max_updates: 10"))
    extended = self.train(more)
    self.assertIn("holds a finished run of this config (attempt 2) and nothing to resume "
                  "from", extended.stderr)
    self.assertNotIn("CONTINUING", extended.stderr)

  def test_more_updates_continue_a_finished_run_as_a_new_attempt(self):
    four = self.config("four.pbtxt", checkpointed(world=2, epochs=100, run_extra="max_updates: 4"))
    eight = self.config("eight.pbtxt", checkpointed(world=2, epochs=100, run_extra="max_updates: 8"))
    self.train(four)
    self.assertIn("this run is finished", self.train(four).stdout)
    continued = self.train(eight)
    self.assertIn("CONTINUING it as attempt 2", continued.stderr)
    found = self.assert_one_run(self.out, 2)
    self.assertEqual(found["run_summary.json"]["total_updates"], 8)
    self.assertEqual(found["finished.json"]["updates"], 8)
    self.assertEqual(found["resume.json"]["update"], 3)  # the newest generation
    self.assertIn("this run is finished", self.train(four).stdout)

  def test_nothing_outside_the_run_folder_is_read_or_removed(self):
    """A reference, or an artifact, reached through a link that leaves
    --out is refused naming the link (exit 2), and what it points to stays
    byte-identical; --overwrite removes the link, never its target."""
    one = self.config("one.pbtxt", checkpointed(world=1))
    two = self.config("two.pbtxt", checkpointed(world=2))
    elsewhere = os.path.join(self.tmp, "kept_elsewhere")
    self.train(one)  # a finished reference in out/reference
    os.rename(os.path.join(self.out, "reference"), elsewhere)
    os.symlink(elsewhere, os.path.join(self.out, "reference"))
    before = folder_digest(elsewhere)
    refused = self.train(two, code=2)
    self.assertIn(os.path.join(self.out, "reference") + " is a link to " + elsewhere,
                  refused.stderr)
    self.assertIn("outside the run folder", refused.stderr)
    self.assertEqual(folder_digest(elsewhere), before)
    # A run's own artifact linked out: the same.
    os.remove(os.path.join(self.out, "reference"))
    self.train(two)
    outside = os.path.join(self.tmp, "first_step_elsewhere.json")
    os.rename(os.path.join(self.out, "first_step.json"), outside)
    os.symlink(outside, os.path.join(self.out, "first_step.json"))
    with open(outside, "rb") as f:
      kept = f.read()
    refused = self.train(two, code=2)
    self.assertIn("first_step.json is a link to", refused.stderr)
    self.train(two, "--overwrite")
    self.assertFalse(os.path.islink(os.path.join(self.out, "first_step.json")))
    with open(outside, "rb") as f:
      self.assertEqual(f.read(), kept)
    self.assertEqual(folder_digest(elsewhere), before)

  def test_a_users_own_link_is_left_alone(self):
    """A link of the user's in a finished run folder (a plot kept
    elsewhere) is not the run's: the next run, --overwrite included, neither
    refuses nor touches it, and its target stays as it was."""
    two = self.config("two.pbtxt", checkpointed(world=2))
    self.train(two)
    plot = os.path.join(self.tmp, "outside_plot.txt")
    with open(plot, "w") as f:
      f.write("a plot\n")
    link = os.path.join(self.out, "latest_plot")
    os.symlink(plot, link)
    self.assertIn("this run is finished", self.train(two).stdout)
    self.train(two, "--overwrite")
    self.assertTrue(os.path.islink(link))
    self.assertEqual(os.readlink(link), plot)
    with open(plot) as f:
      self.assertEqual(f.read(), "a plot\n")

  def test_the_artifacts_say_what_they_mean(self):
    # issue 15's findings on artifacts, on a real two-worker run and the
    # reference it made (one update first; at its end trained through the
    # run for the whole-run verdict).
    two = self.config("two.pbtxt", support.small_config(world=2, epochs=2, views=2))
    self.train(two)
    found = artifacts(self.out)
    parity = found["parity.json"]
    self.assertGreater(parity["reducer_collectives"], 0)
    self.assertGreater(int(parity["reducer_bytes"]), 0)
    self.assertIn("per update", parity["reducer_stats_scope"])
    self.assertEqual(parity["not_measured"], ["rank_weight_sums"])
    self.assertIn("|run - ref| <= atol + rtol * |ref|", parity["pass_rule"])
    validation = found["validation.json"]
    self.assertIn("rows: true label", validation["confusion_matrix_axes"])
    self.assertEqual(len(validation["predictions"]), validation["predictions_counted"])
    correct = sum(p["correct"] for p in validation["predictions"])
    self.assertAlmostEqual(correct / validation["predictions_counted"], validation["accuracy"])
    for p in validation["predictions"]:
      self.assertEqual(p["correct"], p["label"] == p["predicted"])
    self.assertEqual(validation["update"], found["run_summary.json"]["total_updates"])
    audit = found["sampler_audit.json"]
    self.assertEqual(audit["num_training_views"], 2 * audit["num_receipts"])  # views: 2
    self.assertIn("training view", audit["id_meaning"])
    self.assertIn("rank 0's share", found["first_step.json"]["loss_meaning"])
    self.assertIn("whole update", found["run_summary.json"]["loss_meaning"])
    self.assertEqual(found["run_summary.json"]["purpose"], "training run")
    reference = artifacts(os.path.join(self.out, "reference"))
    for name in ("run_manifest.json", "run_summary.json", "validation.json"):
      self.assertIn("trained through the run for its whole-run parity verdict",
                    reference[name]["purpose"], name)
    self.assertEqual(reference["run_summary.json"]["updates"],
                     found["run_summary.json"]["total_updates"])
    self.assertEqual(reference["run_summary.json"]["epochs_completed"], 2)
    self.assertNotIn("share", reference["first_step.json"]["loss_meaning"])
    twin = artifacts(os.path.join(self.out, "drift_reference"))
    self.assertIn("drift twin", twin["run_manifest.json"]["purpose"])

  def test_a_torchrun_restart_after_the_finish_exits_zero_and_keeps_the_run(self):
    two = self.config("two.pbtxt", checkpointed(world=2))
    command = [TORCH_PYTHON, "-m", "torch.distributed.run", "--nproc_per_node=2",
               "--redirects=2", "--tee=2", "--no_python", support.TRAIN,
               "--config=" + two, "--out=" + self.out]
    first = subprocess.run(command[:3] + ["--master_port=%d" % support.free_port()] +
                           command[3:], capture_output=True, text=True, timeout=240)
    self.assertEqual(first.returncode, 0, first.stderr[-3000:])
    before = folder_digest(self.out)
    # What torchrun's agent does after a worker fails past the finish:
    # every rank again, TORCHELASTIC_RESTART_COUNT=1, with the flags it was
    # given (--overwrite too: a restart must not wipe the run).
    port = support.free_port()
    ranks = []
    for rank in (0, 1):
      env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                 TORCHELASTIC_RESTART_COUNT="1")
      ranks.append(subprocess.Popen([support.TRAIN, "--config=" + two, "--out=" + self.out,
                                     "--overwrite"], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True))
    for rank, process in enumerate(ranks):
      stdout, stderr = process.communicate(timeout=120)
      self.assertEqual(process.returncode, 0, stderr[-2000:])
      self.assertIn("finished", stdout, "rank %d" % rank)
    self.assertEqual(folder_digest(self.out), before)


if __name__ == "__main__":
  unittest.main()
