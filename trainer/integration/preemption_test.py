#!/usr/bin/python3
"""Preemption saves (issue 26, item 6), through the REAL train binary, its
launcher and two worker processes: a SIGTERM to the launcher (as Slurm,
Kubernetes and torchrun send ahead of a kill) stops every rank after the
same update, saves a generation there, records "preempted" in
run_state.json and exits 4; running the same command again resumes from
that generation and ends bitwise on the uninterrupted run, losing no
update. SIGUSR1 to one rank only stops both ranks alike. A second signal
stops at once, leaving only verified generations. A run without
checkpoints dies as before; a bad grace period is refused."""
import os
import signal
import subprocess
import time
import unittest

import integration_support as support

CHECKPOINTS = "checkpoint { every_updates: 50 keep_last: 2 }"


def text(checkpoints=CHECKPOINTS):
  return support.small_config(world=2, batch=4, ids=200, epochs=30, extra=checkpoints)


def start(config, out):
  log = open(out + ".log", "w")
  process = subprocess.Popen(
      [support.TRAIN, "--config=" + config, "--out=" + out, "--whole_run_parity=false"],
      stdout=subprocess.DEVNULL, stderr=log)
  return process, out + ".log"




def wait_for_training(out, launcher):
  """Until the first generation is advertised (training is under way)."""
  deadline = time.time() + 120
  while time.time() < deadline:
    checkpoints = os.path.join(out, "checkpoints")
    if os.path.isdir(checkpoints) and any(
        os.path.exists(os.path.join(checkpoints, g, "MANIFEST")) for g in os.listdir(checkpoints)):
      return support.rank_pids(launcher)
    time.sleep(0.05)
  raise AssertionError("training did not start")


def last_attempt(out):
  return support.load(os.path.join(out, "run_state.json"))["attempts"][-1]




class PreemptionTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("preempt")
    cls.config = support.write_config(cls.tmp, "c", text())
    cls.whole = os.path.join(cls.tmp, "whole")
    cls.uninterrupted = support.run_train("--config=" + cls.config, "--out=" + cls.whole,
                                          "--whole_run_parity=false")

  def resume_and_compare(self, out, update):
    resumed = support.run_train("--config=" + self.config, "--out=" + out,
                                "--whole_run_parity=false")
    self.assertEqual(resumed.returncode, 0, resumed.stderr[-3000:])
    self.assertIn("RESUMING", resumed.stderr)
    self.assertEqual(support.load(os.path.join(out, "resume.json"))["update"], update)
    self.assertEqual(support.final_hash(out), support.final_hash(self.whole))

  def test_sigterm_stops_at_an_update_boundary_saves_and_the_rerun_ends_bitwise(self):
    self.assertEqual(self.uninterrupted.returncode, 0, self.uninterrupted.stderr[-2000:])
    out = os.path.join(self.tmp, "term")
    launcher, log = start(self.config, out)
    wait_for_training(out, launcher.pid)
    launcher.send_signal(signal.SIGTERM)
    self.assertEqual(launcher.wait(timeout=60), 4, open(log).read()[-3000:])
    with open(log) as f:
      said = f.read()
    self.assertIn("ranks were preempted", said)
    attempt = last_attempt(out)
    self.assertEqual(attempt["ended"], "preempted")
    self.assertTrue(attempt["saved_at_end"])
    stopped_at = attempt["ended_at_update"]
    self.assertGreater(stopped_at, 0)
    # Nothing was trained that the saved generation does not hold: the
    # rerun resumes exactly where the run stopped (no update lost).
    self.assertNotIn("finished.json", os.listdir(out))
    self.resume_and_compare(out, stopped_at)

  def test_sigusr1_to_one_rank_stops_every_rank_after_the_same_update(self):
    out = os.path.join(self.tmp, "usr1")
    launcher, log = start(self.config, out)
    pids = wait_for_training(out, launcher.pid)
    os.kill(pids[1], signal.SIGUSR1)
    self.assertEqual(launcher.wait(timeout=60), 4, open(log).read()[-3000:])
    with open(log) as f:
      said = f.read()
    stops = [line.split("every rank stops after update ")[1].split(",")[0]
             for line in said.splitlines() if "every rank stops after update" in line]
    self.assertEqual(len(stops), 2, said[-3000:])
    self.assertEqual(stops[0], stops[1])
    self.assertIn("reached 1 rank(s)", said)
    self.assertEqual(last_attempt(out)["ended_at_update"], int(stops[0]))
    self.resume_and_compare(out, int(stops[0]))

  def test_a_second_signal_stops_at_once_leaving_only_verified_generations(self):
    out = os.path.join(self.tmp, "twice")
    launcher, log = start(self.config, out)
    pids = wait_for_training(out, launcher.pid)
    # Two signals of two kinds (one of a kind could merge while pending).
    for pid in pids.values():
      os.kill(pid, signal.SIGUSR1)
      os.kill(pid, signal.SIGTERM)
    self.assertEqual(launcher.wait(timeout=60), 4, open(log).read()[-3000:])
    with open(log) as f:
      self.assertIn("a second signal came: stopping at once", f.read())
    # Whatever was advertised verifies: the rerun resumes from it and ends
    # where the uninterrupted run does.
    resumed = support.run_train("--config=" + self.config, "--out=" + out,
                                "--whole_run_parity=false")
    self.assertEqual(resumed.returncode, 0, resumed.stderr[-3000:])
    self.assertEqual(support.final_hash(out), support.final_hash(self.whole))
    self.assertEqual(support.load(os.path.join(out, "resume.json"))["skipped"], [])

  def test_without_checkpoints_sigterm_ends_the_run_as_before(self):
    tmp = support.temp_dir("preempt_none")
    config = support.write_config(tmp, "c", text(checkpoints=""))
    out = os.path.join(tmp, "out")
    launcher, log = start(config, out)
    deadline = time.time() + 60
    while len(support.rank_pids(launcher.pid)) < 2 and time.time() < deadline:
      time.sleep(0.05)
    time.sleep(1)
    launcher.send_signal(signal.SIGTERM)
    code = launcher.wait(timeout=60)
    self.assertEqual(code, 1, open(log).read()[-3000:])
    with open(log) as f:
      self.assertIn("was killed by signal 15", f.read())

  def test_a_grace_period_below_one_second_is_refused_naming_the_field(self):
    tmp = support.temp_dir("preempt_bad")
    config = support.write_config(tmp, "c", text().replace(
        "log_every_updates: 1000", "log_every_updates: 1000 preemption_grace_seconds: 0"))
    result = support.run_train("--config=" + config, "--out=" + os.path.join(tmp, "out"))
    self.assertEqual(result.returncode, 2, result.stderr[-2000:])
    self.assertIn("run.preemption_grace_seconds: must be >= 1, got 0", result.stderr)


if __name__ == "__main__":
  unittest.main()
