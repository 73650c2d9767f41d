#!/usr/bin/python3
"""//drill:fault_drill for every kill point on each of two ranks: a real
SIGKILL mid-save, a restart, and the comparison with an uninterrupted run;
and --kill_at=random: real SIGKILLs at random moments inside every phase."""
import os
import subprocess
import sys
import unittest

# //trainer/integration:integration_support, from this test's runfiles.
sys.path.insert(0, os.path.join(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"], "trainer", "integration"))
import integration_support as support  # pylint: disable=wrong-import-position

DRILL = os.path.abspath(sys.argv.pop(1))
POINTS = ("before_shard", "mid_shard", "after_shard_before_rename",
          "before_manifest", "mid_manifest")
PHASES = ("forward_backward", "allreduce", "validation_gather", "save")
# What recovery.json of the fixed-point drill has always held.
FIXED_KEYS = ("config", "world_size", "killed_rank", "kill_point", "kill_generation",
              "killed_how", "advertised_generation", "advertised_update", "resumed_from",
              "resumed_update", "lost_updates", "updates_redone", "on_disk_after_kill",
              "skipped", "cleaned_up", "compared_update", "max_abs_gradient_diff",
              "max_abs_parameter_diff", "bitwise_equal", "final_parameters_equal", "pass",
              "failures")


class FaultDrillTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("drill")
    cls.config = support.write(
        os.path.join(cls.tmp, "drill.pbtxt"),
        support.small_config(ids=40, world=2, epochs=2,
                             extra="checkpoint { every_updates: 2 keep_last: 2 }"))

  def drill(self, name, *flags):
    out = os.path.join(self.tmp, name)
    result = subprocess.run([DRILL, "--config=" + self.config, "--out=" + out, *flags],
                            capture_output=True, text=True, timeout=240)
    report = None
    if os.path.exists(os.path.join(out, "recovery.json")):
      report = support.load(os.path.join(out, "recovery.json"))
    return result, out, report

  def test_every_kill_point_on_each_rank_recovers_exactly(self):
    for rank in (0, 1):
      for point in POINTS:
        with self.subTest(rank=rank, point=point):
          result, out, report = self.drill(
              "%s-%d" % (point, rank), "--kill_point=" + point,
              "--kill_rank=%d" % rank, "--kill_generation=2")
          self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
          self.assertEqual(report["killed_rank"], rank)
          self.assertEqual(report["kill_point"], point)
          self.assertIn("rank %d was killed by signal 9" % rank, report["killed_how"])
          # The generation being saved never became advertised.
          self.assertEqual(report["advertised_generation"], 1)
          self.assertEqual(report["resumed_from"], 1)
          self.assertEqual(report["lost_updates"], 0)
          self.assertTrue(report["bitwise_equal"])
          self.assertEqual(report["max_abs_gradient_diff"], 0)
          self.assertTrue(report["final_parameters_equal"])
          self.assertTrue(report["pass"])
          trace = open(os.path.join(out, "failure_trace.log")).read()
          self.assertIn("gen-000002 [no MANIFEST]", trace)
          self.assertIn("passed over gen-000002", trace)
          self.check_left_by_the_kill(report, rank, point)
          for key in FIXED_KEYS:
            self.assertIn(key, report)
          self.assertNotIn("totals", report)
          self.assertEqual(report["trials"], [])
          # The restart resumed from the generation before the one being saved.
          resume = support.load(os.path.join(out, "interrupted", "resume.json"))
          self.assertEqual(resume["generation"], report["kill_generation"] - 1)
          self.assertIn("gen-000002: no MANIFEST (partial save)", report["skipped"])

  def check_left_by_the_kill(self, report, rank, point):
    """The checkpoint folder as the drill listed it right after the killed
    run, before the restart: generation 1 advertised, generation 2 holding
    exactly what a death at `point` leaves, and no MANIFEST for it."""
    folders = {}
    for line in report["on_disk_after_kill"]:
      name, files = line.split(": ", 1)
      folders[name] = [f.split(" (")[0] for f in files.split(", ") if f]
    self.assertEqual(sorted(folders), ["gen-000001 [advertised]", "gen-000002 [no MANIFEST]"])
    self.assertIn("MANIFEST", folders["gen-000001 [advertised]"])
    saving = folders["gen-000002 [no MANIFEST]"]
    self.assertNotIn("MANIFEST", saving)
    shard = "shard-rank-%05d.pt" % rank
    shard_temps = [f for f in saving if f.startswith(shard + ".tmp-")]
    manifest_temps = [f for f in saving if f.startswith("MANIFEST.tmp-")]
    if point == "before_shard":
      self.assertNotIn(shard, saving)
      self.assertEqual(shard_temps, [])
    elif point in ("mid_shard", "after_shard_before_rename"):
      self.assertNotIn(shard, saving)
      self.assertEqual(len(shard_temps), 1, saving)
    else:  # before_manifest, mid_manifest: the dying rank's shard is durable
      self.assertIn(shard, saving)
      self.assertEqual(shard_temps, [])
      if rank == 0:  # every shard was confirmed to rank 0
        self.assertIn("shard-rank-00001.pt", saving)
    if point == "mid_manifest" and rank == 0:
      self.assertEqual(len(manifest_temps), 1, saving)
    else:
      self.assertEqual(manifest_temps, [])

  def random_drill(self, name, checkpoint, trials, seed):
    """The random drill of two workers, 16 updates, `checkpoint` their
    checkpoint block: its result, folder and report, checked to pass."""
    config = support.write(
        os.path.join(self.tmp, name + ".pbtxt"),
        support.small_config(ids=40, world=2, epochs=2, extra=checkpoint))
    out = os.path.join(self.tmp, name)
    result = subprocess.run([DRILL, "--config=" + config, "--out=" + out, "--kill_at=random",
                             "--trials=%d" % trials, "--seed=%d" % seed],
                            capture_output=True, text=True, timeout=300)
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    report = support.load(os.path.join(out, "recovery.json"))
    self.assertTrue(report["pass"], report["failures"])
    return result, out, report

  def test_random_kills_inside_every_phase_recover_exactly(self):
    # 16 updates, a generation every 3 (the validation's restart redoes one
    # update); four trials cycle through the four phases.
    result, out, report = self.random_drill(
        "random", "checkpoint { every_updates: 3 keep_last: 2 }", 4, 20261201)
    self.assertIn("seed 20261201 (--seed=20261201 draws them again)", result.stdout)
    self.assertEqual(report["kill_point"], "random")
    self.assertEqual(report["random_plan"]["seed"], "20261201")
    self.assertEqual(report["random_plan"]["total_updates"], 16)
    self.assertEqual(sorted(report["random_plan"]["phases"]), sorted(PHASES))
    totals = report["totals"]
    self.assertEqual((totals["trials"], totals["passed"], totals["failed"]), (4, 4, 0))
    self.assertEqual(totals["per_phase"], {phase: 1 for phase in PHASES})
    self.assertLessEqual(totals["max_updates_redone"], 3)
    self.assertEqual(totals["killed_mid_phase"] + totals["killed_at_phase_end"], 4)
    self.assertEqual([t["trial"] for t in report["trials"]], [1, 2, 3, 4])
    for trial in report["trials"]:
      with self.subTest(trial=trial["trial"], phase=trial["phase"]):
        self.check_random_trial(out, trial)

  def test_random_kills_with_background_saves_recover_exactly(self):
    # checkpoint.async: the phase save_background joins the four; five
    # trials hit each once. A kill may also lose the save in flight, so up
    # to 2 x every_updates updates are redone.
    result, out, report = self.random_drill(
        "random_async", "checkpoint { every_updates: 3 keep_last: 2 async: true }", 5, 20261204)
    self.assertIn("saved in the background", result.stdout)
    phases = PHASES + ("save_background",)
    self.assertEqual(sorted(report["random_plan"]["phases"]), sorted(phases))
    totals = report["totals"]
    self.assertEqual((totals["trials"], totals["passed"], totals["failed"]), (5, 5, 0))
    self.assertEqual(totals["per_phase"], {phase: 1 for phase in phases})
    self.assertLessEqual(totals["max_updates_redone"], 6)
    for trial in report["trials"]:
      with self.subTest(trial=trial["trial"], phase=trial["phase"]):
        self.check_random_trial(out, trial)
        if trial["phase"] == "save_background":
          # Killed while its save was written in the background: that
          # generation is advertised only if the kill came at the phase's
          # end (the phase lasts until the rank sees it advertised);
          # otherwise the restart resumed from the one before.
          self.assertIn(trial["advertised_update"], (trial["update"] - 3, trial["update"]),
                        trial)

  def check_random_trial(self, out, trial):
    """A trial of the random drill: the planned rank really died inside the
    planned phase, by the timer or at the phase's end; everything advertised
    restores; the restart resumed from the newest of it, redid at most
    every_updates updates, and matched the uninterrupted run bit for bit."""
    self.assertTrue(trial["pass"], trial["failures"])
    rank, phase, update = trial["rank"], trial["phase"], trial["update"]
    if phase == "validation_gather":
      self.assertEqual(update, 16)
    elif phase in ("save", "save_background"):
      self.assertEqual(update % 3, 0)
    self.assertIn("rank %d was killed by signal 9" % rank, trial["killed_how"])
    log = open(os.path.join(out, "trial-%02d" % trial["trial"], "interrupted_run.log")).read()
    # The hook's line, written as the phase began, then the kill inside it.
    self.assertIn("fault injection: rank %d kills itself (SIGKILL) inside %s of update %d, "
                  "%d us after the phase begins" % (rank, phase, update, trial["delay_us"]), log)
    if trial["killed_at_phase_end"]:
      self.assertIn("at the end of %s of update %d: the phase ended" % (phase, update),
                    trial["fault_line"])
    else:
      self.assertIn("inside %s of update %d" % (phase, update), trial["fault_line"])
    self.assertNotIn("trained 16 updates on 2 worker(s)", log)  # it never finished
    self.assertTrue(trial["advertised_checked"])
    for line in trial["advertised_checked"]:
      self.assertIn("verify and deserialise", line)
    self.assertGreater(trial["advertised_generation"], 0)
    self.assertEqual(trial["resumed_from"], trial["advertised_generation"])
    self.assertEqual(trial["resumed_update"], trial["advertised_update"])
    self.assertEqual(trial["lost_updates"], 0)
    self.assertEqual(trial["updates_redone"], update - trial["resumed_update"])
    self.assertGreaterEqual(trial["updates_redone"], 0)
    self.assertLessEqual(trial["updates_redone"], 3)
    self.assertTrue(trial["bitwise_equal"])
    self.assertTrue(trial["final_parameters_equal"])
    if trial["compared_update"] >= 0:
      self.assertEqual(trial["compared_update"], trial["resumed_update"])
      self.assertEqual(trial["max_abs_gradient_diff"], 0)
      self.assertEqual(trial["max_abs_parameter_diff"], 0)

  def test_random_sigterms_stop_saved_and_resume_with_nothing_redone(self):
    # Three preemptions, one in each phase a SIGTERM can land in: every run
    # stops at an update boundary at or past the one in flight, saves there,
    # exits 4, and the restart redoes nothing and matches the uninterrupted run.
    config = support.write(
        os.path.join(self.tmp, "sigterm.pbtxt"),
        support.small_config(ids=40, world=2, epochs=2,
                             extra="checkpoint { every_updates: 3 keep_last: 2 }"))
    out = os.path.join(self.tmp, "sigterm")
    result = subprocess.run([DRILL, "--config=" + config, "--out=" + out, "--kill_at=random",
                             "--trials=1", "--sigterm_trials=3", "--seed=20261203"],
                            capture_output=True, text=True, timeout=300)
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    self.assertIn("then 3 SIGTERM trials in the order", result.stdout)
    report = support.load(os.path.join(out, "recovery.json"))
    self.assertTrue(report["pass"], report["failures"])
    self.assertEqual(report["random_plan"]["sigterm_trials"], 3)
    self.assertEqual(sorted(report["random_plan"]["sigterm_phases"]),
                     ["allreduce", "forward_backward", "save"])
    totals = report["totals"]
    self.assertEqual((totals["trials"], totals["passed"], totals["preempted"]), (4, 4, 3))
    self.assertEqual([t["signal"] for t in report["trials"]],
                     ["SIGKILL", "SIGTERM", "SIGTERM", "SIGTERM"])
    self.check_random_trial(out, report["trials"][0])
    for trial in report["trials"][1:]:
      with self.subTest(trial=trial["trial"], phase=trial["phase"]):
        self.check_preempted_trial(out, trial)

  def check_preempted_trial(self, out, trial):
    """A SIGTERM trial: the planned rank received its SIGTERM inside the
    planned phase; the ranks stopped after an update at or past the one in
    flight and saved it; the restart resumed from that save, redid nothing and
    matched the uninterrupted run bit for bit."""
    self.assertTrue(trial["pass"], trial["failures"])
    rank, phase, update = trial["rank"], trial["phase"], trial["update"]
    self.assertNotEqual(phase, "validation_gather")
    log = open(os.path.join(out, "trial-%02d" % trial["trial"], "interrupted_run.log")).read()
    self.assertIn("fault injection: rank %d sends itself SIGTERM (a preemption) inside %s of "
                  "update %d" % (rank, phase, update), log)
    self.assertIn("preempted after update %d" % trial["stopped_at_update"], trial["killed_how"])
    self.assertNotIn("trained 16 updates on 2 worker(s)", log)
    self.assertGreaterEqual(trial["stopped_at_update"], update + (0 if phase == "save" else 1))
    self.assertLess(trial["stopped_at_update"], 16)
    self.assertTrue(trial["saved_at_stop"])
    self.assertEqual(trial["advertised_update"], trial["stopped_at_update"])
    self.assertEqual(trial["resumed_update"], trial["stopped_at_update"])
    self.assertEqual(trial["lost_updates"], 0)
    self.assertEqual(trial["updates_redone"], 0)
    self.assertTrue(trial["bitwise_equal"])
    self.assertTrue(trial["final_parameters_equal"])
    attempts = support.load(os.path.join(out, "trial-%02d" % trial["trial"], "interrupted",
                                         "run_state.json"))["attempts"]
    self.assertEqual(attempts[0]["ended"], "preempted")
    self.assertEqual(int(attempts[0]["ended_at_update"]), trial["stopped_at_update"])

  def test_a_random_drill_needs_two_generations_and_a_known_mode(self):
    config = support.write(
        os.path.join(self.tmp, "short.pbtxt"),
        support.small_config(ids=40, world=2, epochs=1, run_extra="max_updates: 4",
                             extra="checkpoint { every_updates: 3 keep_last: 2 }"))
    result = subprocess.run([DRILL, "--config=" + config,
                             "--out=" + os.path.join(self.tmp, "short"), "--kill_at=random"],
                            capture_output=True, text=True, timeout=240)
    self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
    self.assertIn("at least two generations: it has 4 updates and saves every 3",
                  result.stderr)
    result, _, _ = self.drill("sideways", "--kill_at=sideways")
    self.assertEqual(result.returncode, 2)
    self.assertIn("--kill_at=sideways: must be fixed or random", result.stderr)

  def test_train_refuses_a_phase_kill_it_cannot_arm(self):
    out = os.path.join(self.tmp, "refused")
    for flags, message in (
        (["--kill_phase=backward", "--kill_update=3"],
         'unknown kill phase "backward"; valid: forward_backward, allreduce, '
         "validation_gather, save, save_background, optimizer_step"),
        (["--kill_phase=save"], "--kill_phase needs --kill_update >= 0"),
        (["--kill_phase=save", "--kill_update=3", "--kill_delay_us=-1"],
         "kill delay -1 us must be >= 0"),
        (["--kill_phase=save", "--kill_update=3", "--kill_point=mid_shard"],
         "one injected failure per run"),
        (["--kill_phase=allreduce", "--kill_update=3", "--kill_rank=2"],
         "--kill_rank=2: no such rank with world_size 2")):
      with self.subTest(flags=flags):
        result = support.run_train("--config=" + self.config, "--out=" + out, *flags)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(message, result.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "checkpoints")))

  def test_a_corrupt_newest_generation_falls_back_or_stops(self):
    # Two generations saved, then generation 2's shard of rank 1 corrupted by
    # hand (one byte flipped): the restart must pass it over, naming the
    # file, and resume from generation 1; with stop_on_corruption it stops.
    text = support.small_config(ids=40, world=2, epochs=1, run_extra="max_updates: 4",
                                extra="checkpoint { every_updates: 2 keep_last: 3 }")
    config = support.write(os.path.join(self.tmp, "corrupt.pbtxt"), text)
    strict = support.write(os.path.join(self.tmp, "strict.pbtxt"), text.replace(
        "keep_last: 3", "keep_last: 3 stop_on_corruption: true"))
    for name, path in (("fallback", config), ("strict", strict)):
      out = os.path.join(self.tmp, "corrupt-" + name)
      result = support.run_train("--config=" + config, "--out=" + out)
      self.assertEqual(result.returncode, 0, result.stderr)
      # As if the run had died after its last save: without its finish
      # record the folder holds an unfinished run, which a restart resumes
      # (a finished one it would leave alone).
      os.remove(os.path.join(out, "finished.json"))
      shard = os.path.join(out, "checkpoints", "gen-000002", "shard-rank-00001.pt")
      with open(shard, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0xFF]))
      result = support.run_train("--config=" + path, "--out=" + out)
      if name == "fallback":
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("passing over gen-000002: shard-rank-00001.pt", result.stderr)
        self.assertEqual(support.load(os.path.join(out, "resume.json"))["generation"], 1)
      else:
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("shard-rank-00001.pt", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "resume.json")))

  def test_a_run_that_never_reaches_the_kill_is_reported(self):
    result, _, report = self.drill("never", "--kill_generation=999")
    self.assertNotEqual(result.returncode, 0)
    self.assertIn("without reaching generation 999", result.stderr)
    self.assertIsNone(report)

  def test_a_config_the_trainer_refuses_is_bad_input(self):
    config = support.write(
        os.path.join(self.tmp, "unknown_sampler.pbtxt"),
        support.small_config(ids=40, world=2, sampler="round_robin",
                             extra="checkpoint { every_updates: 2 keep_last: 2 }"))
    result = subprocess.run([DRILL, "--config=" + config,
                             "--out=" + os.path.join(self.tmp, "unknown_sampler")],
                            capture_output=True, text=True, timeout=240)
    self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
    self.assertIn("no sampler_policy plugin named 'round_robin'", result.stderr)
    self.assertNotIn("terminate called", result.stderr)

  def test_set_reaches_the_drill_and_every_run_it_starts(self):
    """Issue 30: --set overrides the drill's config, checked with it, and
    every train run the drill starts gets it: this config has no
    checkpoints but for the override, so the drill reaches generation 2
    only if its runs were given it."""
    config = support.write(os.path.join(self.tmp, "no_checkpoints.pbtxt"),
                           support.small_config(ids=40, world=2, epochs=2))
    out = os.path.join(self.tmp, "set")
    result = subprocess.run(
        [DRILL, "--config=" + config, "--out=" + out, "--kill_point=mid_shard",
         "--kill_rank=1", "--kill_generation=2",
         "--set", "checkpoint={ every_updates: 2 keep_last: 2 }"],
        capture_output=True, text=True, timeout=240)
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    report = support.load(os.path.join(out, "recovery.json"))
    self.assertTrue(report["pass"], report["failures"])
    self.assertEqual(report["advertised_generation"], 1)
    # Without it, the drill refuses the config; a bad override names itself.
    for sets, needle in (([], "checkpoint.every_updates must be > 0"),
                         (["--set=checkpoint.every_update=2"],
                          "--set checkpoint.every_update=2: no field 'every_update'")):
      result = subprocess.run([DRILL, "--config=" + config,
                               "--out=" + os.path.join(self.tmp, "set-bad"), *sets],
                              capture_output=True, text=True, timeout=60)
      self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
      self.assertIn(needle, result.stderr)

  def test_bad_flags(self):
    result, _, _ = self.drill("bad", "--kill_point=halfway")
    self.assertEqual(result.returncode, 2)
    self.assertIn("mid_shard", result.stderr)
    result, _, _ = self.drill("bad2", "--kill_rank=5")
    self.assertEqual(result.returncode, 2)

  def drill_config(self, name, text):
    config = support.write(os.path.join(self.tmp, name + ".pbtxt"), text)
    out = os.path.join(self.tmp, name)
    return subprocess.run([DRILL, "--config=" + config, "--out=" + out],
                          capture_output=True, text=True, timeout=240)

  def test_bad_input_is_reported_not_a_crash(self):
    # Refused by the drill's own load, before any run starts.
    result = self.drill_config("plugin", support.small_config(
        world=2, sampler="round_robin", extra="checkpoint { every_updates: 2 }"))
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("sampler.name: no sampler_policy plugin named 'round_robin'",
                  result.stderr)
    # Refused by the first run (its data cannot be read): the drill says so.
    result = self.drill_config("manifest", support.small_config(
        world=2, extra="checkpoint { every_updates: 2 }").replace(
            "synthetic { num_identities: 40 rare_class_fraction: 0.05 seed: 3 }",
            'manifest_path: "/nonexistent/receipts.csv"'))
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("the interrupted run refused its input", result.stderr)
    self.assertIn("/nonexistent/receipts.csv", result.stderr)
    self.assertNotIn("out_of_range", result.stderr)


if __name__ == "__main__":
  unittest.main()
