#!/usr/bin/python3
"""Ranks of the REAL train binary under a real mpirun: backend "mpi", as
allreduce_sum over it and as the old reducer name mpi_allreduce (under an
outside mpirun, its store's address shared over MPI, and under
run { launcher: "mpirun" }), trains bitwise what allreduce_sum over Gloo
trains; a killed rank ends the job non-zero and the restart resumes from
the newest advertised generation; what is refused. Runs as root inside
bazel test with what OpenMPI needs there."""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import integration_support as support  # pylint: disable=wrong-import-position

CHECKPOINTS = "checkpoint { every_updates: 2 keep_last: 2 }"


def config(tmp, name, reducer, launcher="local", extra=""):
  return support.write(
      os.path.join(tmp, name + ".pbtxt"),
      support.small_config(ids=40, world=2, epochs=2, reducer=reducer,
                           run_extra='launcher: "%s"' % launcher,
                           extra=CHECKPOINTS + "\n" + extra))


def mpirun_env():
  """What an outside mpirun needs as root in a container under bazel test:
  the run-as-root variables and a short TMPDIR."""
  env = dict(os.environ)
  for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
    env.pop(key, None)
  env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             TMPDIR=tempfile.mkdtemp(prefix="ompi", dir="/tmp"))
  return env


def outside_mpirun(*args, env=None):
  command = ["mpirun", "-np", "2", "--oversubscribe", "--mca", "pml", "ob1",
             "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle", "1",
             support.TRAIN, *args]
  return subprocess.run(command, capture_output=True, text=True, timeout=240,
                        env=env or mpirun_env())


def first_update(out):
  step = support.load(os.path.join(out, "first_step.json"))
  return step["gradients"], step["parameters_after"]




class MpiRunTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("mpi")
    # The same training, reduced over Gloo (ranks under the launcher's
    # mpirun) and over MPI (an outside mpirun, then the launcher's).
    cls.gloo_out = os.path.join(cls.tmp, "gloo")
    cls.gloo = support.run_train(
        "--config=" + config(cls.tmp, "gloo", "allreduce_sum", "mpirun"),
        "--out=" + cls.gloo_out, env=mpirun_env())
    cls.outside_out = os.path.join(cls.tmp, "outside")
    cls.outside = outside_mpirun("--config=" + config(cls.tmp, "mpi", "mpi_allreduce"),
                                 "--out=" + cls.outside_out)
    cls.launched_out = os.path.join(cls.tmp, "launched")
    cls.launched = support.run_train(
        "--config=" + config(cls.tmp, "mpi_launched", "mpi_allreduce", "mpirun"),
        "--out=" + cls.launched_out, env=mpirun_env())
    # The transport named as such: allreduce_sum over backend "mpi".
    cls.backend_out = os.path.join(cls.tmp, "backend")
    cls.backend = support.run_train(
        "--config=" + config(cls.tmp, "mpi_backend", "allreduce_sum", "mpirun",
                             extra='backend: "mpi"'),
        "--out=" + cls.backend_out, env=mpirun_env())

  def test_every_run_finished(self):
    for result in (self.gloo, self.outside, self.launched, self.backend):
      self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

  def test_the_launcher_logs_its_mpirun_command_with_the_defaults(self):
    for result in (self.gloo, self.launched):
      self.assertIn("launcher: mpirun -np 2 --oversubscribe --mca pml ob1 --mca btl "
                    "self,vader --mca mpi_yield_when_idle 1", result.stderr)
      self.assertEqual("--allow-run-as-root" in result.stderr, os.getuid() == 0)
    self.assertIn("gradients over MPI", self.launched.stderr)
    self.assertIn("gradients over MPI", self.backend.stderr)
    self.assertNotIn("gradients over MPI", self.gloo.stderr)

  def test_over_mpi_is_bitwise_allreduce_sum_over_gloo_for_two_ranks(self):
    gloo_gradients, gloo_after = first_update(self.gloo_out)
    for out, reducer in ((self.outside_out, "mpi_allreduce"),
                         (self.launched_out, "mpi_allreduce"),
                         (self.backend_out, "allreduce_sum")):
      gradients, after = first_update(out)
      self.assertEqual(gradients, gloo_gradients, out)
      self.assertEqual(after, gloo_after, out)
      self.assertEqual(support.final_hash(out), support.final_hash(self.gloo_out), out)
      parity = support.load(os.path.join(out, "parity.json"))
      self.assertTrue(parity["pass"])
      self.assertEqual(parity["reducer"], reducer)
      manifest = support.load(os.path.join(out, "run_manifest.json"))
      self.assertEqual(manifest["platform"]["backend"], "mpi", out)

  def test_the_old_reducer_name_keeps_its_fingerprint(self):
    # mpi_allreduce and allreduce_sum are different plugins (the name is in
    # the fingerprint); the backend is not.
    old = support.load(os.path.join(self.launched_out, "run_manifest.json"))
    gloo = support.load(os.path.join(self.gloo_out, "run_manifest.json"))
    new = support.load(os.path.join(self.backend_out, "run_manifest.json"))
    self.assertEqual(new["config_fingerprint"], gloo["config_fingerprint"])
    self.assertNotEqual(old["config_fingerprint"], gloo["config_fingerprint"])

  def test_a_killed_rank_ends_the_job_and_the_restart_resumes(self):
    path = config(self.tmp, "killed", "mpi_allreduce", "mpirun")
    out = os.path.join(self.tmp, "killed")
    killed = support.run_train("--config=" + path, "--out=" + out, "--kill_phase=allreduce",
                               "--kill_rank=1", "--kill_update=5", env=mpirun_env())
    self.assertEqual(killed.returncode, 1, killed.stdout + killed.stderr)
    self.assertIn("mpirun exited with status", killed.stderr)
    self.assertIn("rank 1", killed.stderr)
    resumed = support.run_train("--config=" + path, "--out=" + out, env=mpirun_env())
    self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)
    resume = support.load(os.path.join(out, "resume.json"))
    self.assertEqual(resume["generation"], 2)
    self.assertEqual(support.final_hash(out), support.final_hash(self.launched_out))

  def test_a_sigterm_to_train_under_mpirun_stops_saved_and_resumes_bitwise(self):
    # A run long enough to be signalled mid-way (1 500 updates).
    path = support.write(
        os.path.join(self.tmp, "preempted.pbtxt"),
        support.small_config(world=2, batch=4, ids=200, epochs=30, reducer="mpi_allreduce",
                             run_extra='launcher: "mpirun"',
                             extra="checkpoint { every_updates: 50 keep_last: 2 }"))
    whole = os.path.join(self.tmp, "preempted_whole")
    uninterrupted = support.run_train("--config=" + path, "--out=" + whole,
                                      "--whole_run_parity=false", env=mpirun_env())
    self.assertEqual(uninterrupted.returncode, 0, uninterrupted.stderr[-3000:])
    out = os.path.join(self.tmp, "preempted")
    with open(out + ".log", "w") as log:
      launcher = subprocess.Popen([support.TRAIN, "--config=" + path, "--out=" + out,
                                   "--whole_run_parity=false"],
                                  stdout=subprocess.DEVNULL, stderr=log, env=mpirun_env())
      deadline = time.time() + 120
      while not glob.glob(os.path.join(out, "checkpoints", "gen-*", "MANIFEST")):
        self.assertLess(time.time(), deadline, "training did not start")
        self.assertIsNone(launcher.poll(), "the run ended before it was signalled")
        time.sleep(0.05)
      launcher.send_signal(signal.SIGTERM)
      code = launcher.wait(timeout=120)
    said = open(out + ".log").read()
    self.assertEqual(code, 4, said[-3000:])
    self.assertIn("passed on to mpirun as SIGUSR1", said)
    self.assertIn("mpirun exited with status 4: the ranks were preempted", said)
    attempt = support.load(os.path.join(out, "run_state.json"))["attempts"][-1]
    self.assertEqual(attempt["ended"], "preempted")
    self.assertTrue(attempt["saved_at_end"])
    stopped_at = int(attempt["ended_at_update"])
    self.assertLess(stopped_at, 1500)
    resumed = support.run_train("--config=" + path, "--out=" + out, "--whole_run_parity=false",
                                env=mpirun_env())
    self.assertEqual(resumed.returncode, 0, resumed.stderr[-3000:])
    self.assertEqual(int(support.load(os.path.join(out, "resume.json"))["update"]), stopped_at)
    self.assertEqual(support.final_hash(out), support.final_hash(whole))

  def test_a_bad_row_the_workers_find_under_mpirun_exits_2(self):
    """Issue 26, item 4, under run { launcher: "mpirun" }: the README's
    sequence (the reference first on good data, then two workers on a CSV
    that gained a bad row) exits 2, the workers' cause, as on a fresh
    folder."""
    folder = os.path.join(self.tmp, "mydata")
    os.makedirs(os.path.join(folder, "images"))
    rows = ["receipt_id,image,label"]
    for i in range(12):
      pixels = bytes((x * 7 + y * 13 + i * 29) % 256 for y in range(16) for x in range(16))
      with open(os.path.join(folder, "images", "r%02d.pgm" % i), "wb") as f:
        f.write(b"P5\n16 16\n255\n" + pixels)
      rows.append("r%02d,images/r%02d.pgm,%s" % (i, i, ("ok", "blurred", "faded", "cropped")[i % 4]))
    support.write(os.path.join(folder, "receipts.csv"), "\n".join(rows) + "\n")
    base = ('data { manifest_path: "receipts.csv" image_size: 16 validation_fraction: 0.25 }\n'
            'model { architecture: "cnn" conv_channels: [4] hidden_units: [8] }\n'
            'optimizer { sgd { learning_rate: 0.05 momentum: 0.9 } }\nglobal_batch: 4\n')
    one = support.write(os.path.join(folder, "one.pbtxt"), base)
    two = support.write(os.path.join(folder, "two.pbtxt"),
                        base + 'world_size: 2\nrun { launcher: "mpirun" }\n')
    out = os.path.join(self.tmp, "bad_row")
    result = support.run_train("--config=" + one, "--out=" + out, env=mpirun_env())
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    with open(os.path.join(folder, "receipts.csv"), "a") as f:
      f.write("r99,images/r00.pgm,smudged\n")
    for where in (out, os.path.join(self.tmp, "bad_row_fresh")):
      result = support.run_train("--config=" + two, "--out=" + where, env=mpirun_env())
      self.assertEqual(result.returncode, 2, result.stdout[-2000:] + result.stderr[-3000:])
      self.assertIn("smudged", result.stderr)

  def test_mpi_allreduce_without_mpirun_is_a_config_error(self):
    path = config(self.tmp, "no_mpirun", "mpi_allreduce")
    local = support.run_train("--config=" + path, "--out=" + os.path.join(self.tmp, "n1"))
    self.assertEqual(local.returncode, 2, local.stderr)
    self.assertIn("reducer.name: mpi_allreduce needs ranks started by mpirun, but "
                  "run.launcher is 'local'", local.stderr)
    torchrun = support.run_train(
        "--config=" + path, "--out=" + os.path.join(self.tmp, "n2"),
        env={"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
             "MASTER_PORT": str(support.free_port())})
    self.assertEqual(torchrun.returncode, 2, torchrun.stderr)
    self.assertIn("but RANK is set", torchrun.stderr)

  def test_backend_mpi_without_mpirun_is_a_config_error(self):
    path = config(self.tmp, "no_mpirun_backend", "allreduce_sum", extra='backend: "mpi"')
    local = support.run_train("--config=" + path, "--out=" + os.path.join(self.tmp, "n4"))
    self.assertEqual(local.returncode, 2, local.stderr)
    self.assertIn('backend: backend "mpi" needs ranks started by mpirun, but '
                  "run.launcher is 'local'", local.stderr)

  def test_outside_mpirun_without_master_port_needs_backend_mpi(self):
    result = outside_mpirun("--config=" + config(self.tmp, "gloo_outside", "allreduce_sum"),
                            "--out=" + os.path.join(self.tmp, "n3"))
    self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
    self.assertIn("pass MASTER_ADDR and MASTER_PORT (mpirun -x)", result.stderr)


if __name__ == "__main__":
  unittest.main()
