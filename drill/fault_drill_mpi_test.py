#!/usr/bin/python3
"""One //drill:fault_drill trial with the ranks under mpirun: the config's
run { launcher: "mpirun" } and reducer mpi_allreduce. Rank 1 is SIGKILLed
mid-save; mpirun ends the job non-zero; the restart resumes from the newest
advertised generation and matches the uninterrupted run bit for bit."""
import os
import subprocess
import sys
import tempfile
import unittest

# //trainer/integration:integration_support, from this test's runfiles.
sys.path.insert(0, os.path.join(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"], "trainer", "integration"))
import integration_support as support  # pylint: disable=wrong-import-position

DRILL = os.path.abspath(sys.argv.pop(1))


class FaultDrillUnderMpirunTest(unittest.TestCase):

  def test_a_kill_mid_save_under_mpirun_recovers_exactly(self):
    tmp = support.temp_dir("drill_mpi")
    config = support.write(
        os.path.join(tmp, "drill.pbtxt"),
        support.small_config(ids=40, world=2, epochs=2, reducer="mpi_allreduce",
                             run_extra='launcher: "mpirun"',
                             extra="checkpoint { every_updates: 2 keep_last: 2 }"))
    out = os.path.join(tmp, "mid_shard")
    env = dict(os.environ, TMPDIR=tempfile.mkdtemp(prefix="ompi", dir="/tmp"))
    result = subprocess.run([DRILL, "--config=" + config, "--out=" + out,
                             "--kill_point=mid_shard", "--kill_rank=1", "--kill_generation=2"],
                            capture_output=True, text=True, timeout=240, env=env)
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    report = support.load(os.path.join(out, "recovery.json"))
    self.assertTrue(report["pass"], report["failures"])
    self.assertEqual(report["killed_rank"], 1)
    self.assertIn("rank 1", report["killed_how"])
    self.assertIn("signal 9", report["killed_how"])
    self.assertEqual(report["advertised_generation"], 1)
    self.assertEqual(report["resumed_from"], 1)
    self.assertEqual(report["lost_updates"], 0)
    self.assertTrue(report["bitwise_equal"])
    self.assertTrue(report["final_parameters_equal"])
    # The launcher's mpirun command is in the runs' logs.
    logs = [os.path.join(root, name) for root, _, names in os.walk(out)
            for name in names if name.endswith(".log")]
    self.assertTrue(any("launcher: mpirun -np 2" in open(log).read() for log in logs), logs)


if __name__ == "__main__":
  unittest.main()
