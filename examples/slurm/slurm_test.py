#!/usr/bin/python3
"""Ranks under Slurm (issue 30), against a real single-node Slurm this test
starts: munged with its own key and socket, slurmctld and slurmd (Debian's
slurm-wlm, installed by tools/install_deps.sh) with a slurm.conf of their
own in a temporary folder, on free ports.

- `srun -n 2 train` trains the two-worker config: each task is one rank
  (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), the store on the first host
  of SLURM_JOB_NODELIST, and parity holds;
- a rank killed mid-save ends the step (srun --kill-on-bad-exit), and the
  rerun resumes from the newest generation that verifies and ends with the
  parameters of the uninterrupted run, bitwise;
- examples/slurm/two_worker.sbatch, submitted with `sbatch --wait`, trains;
- `srun -n 3` on the two-worker config exits 2 naming SLURM_NTASKS and the
  config's world_size.

Where Slurm cannot start (not installed, a daemon refusing), the test says
why and skips (exit 0 with a SKIPPED line).

Arguments: the train binary, the sbatch script."""
import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"], "trainer", "integration"))
import integration_support as support  # pylint: disable=wrong-import-position

SBATCH_SCRIPT = os.path.abspath(sys.argv.pop(1))
SBIN = ":".join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin"])
DAEMONS = ["munged", "mungekey", "slurmctld", "slurmd", "srun", "sbatch", "sinfo"]
CONFIG = support.small_config(world=2, epochs=3, extra="checkpoint { every_updates: 3 }")

SLURM_CONF = """ClusterName=receiptparity
SlurmctldHost={node}(127.0.0.1)
SlurmUser={user}
SlurmdUser={user}
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder}/munge/munge.socket
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName={node} NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""


def node_name():
  """This host's name if it resolves (the store's host), else localhost."""
  name = socket.gethostname().split(".")[0]
  try:
    socket.gethostbyname(name)
    return name
  except OSError:
    return "localhost"


class SlurmCluster:
  """munged, slurmctld and slurmd of this test, in a folder of their own."""

  def __init__(self):
    # Short: munged's socket path must fit a sockaddr_un.
    self.folder = tempfile.mkdtemp(prefix="rp-slurm-", dir="/tmp")
    self.node = node_name()
    self.env = dict(os.environ, SLURM_CONF=os.path.join(self.folder, "slurm.conf"),
                    PATH=SBIN)
    for key in [k for k in self.env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
      del self.env[key]
    self.daemons = []

  def tool(self, name):
    return shutil.which(name, path=SBIN)

  def start(self):
    """None when the cluster is up, else why it could not start."""
    missing = [d for d in DAEMONS if self.tool(d) is None]
    if missing:
      return "not installed: " + ", ".join(missing) + " (tools/install_deps.sh installs them)"
    munge = os.path.join(self.folder, "munge")
    for sub in ("munge", "state", "spool"):
      os.makedirs(os.path.join(self.folder, sub), mode=0o700)
    key = os.path.join(munge, "munge.key")
    made = subprocess.run([self.tool("mungekey"), "--create", "--keyfile=" + key],
                          capture_output=True, text=True)
    if made.returncode != 0:
      return "mungekey: " + made.stderr.strip()
    os.chmod(key, 0o600)
    self.daemons.append(subprocess.Popen(
        [self.tool("munged"), "--foreground", "--force",
         "--socket=" + os.path.join(munge, "munge.socket"), "--key-file=" + key,
         "--pid-file=" + os.path.join(munge, "munged.pid"),
         "--log-file=" + os.path.join(munge, "munged.log"),
         "--seed-file=" + os.path.join(munge, "munged.seed")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    if not self.wait_for(lambda: os.path.exists(os.path.join(munge, "munge.socket")), 10):
      return "munged did not start: " + self.log("munge/munged.log")
    support.write(self.env["SLURM_CONF"], SLURM_CONF.format(
        node=self.node, user=getpass.getuser(), ctld_port=support.free_port(),
        slurmd_port=support.free_port(), folder=self.folder))
    self.daemons.append(subprocess.Popen([self.tool("slurmctld"), "-D", "-c", "-i"],
                                         env=self.env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
    self.daemons.append(subprocess.Popen([self.tool("slurmd"), "-D", "-N", self.node],
                                         env=self.env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
    if not self.wait_for(self.node_is_idle, 30):
      return ("the node did not come up: slurmctld.log: " + self.log("slurmctld.log") +
              " slurmd.log: " + self.log("slurmd.log"))
    return None

  def node_is_idle(self):
    state = subprocess.run([self.tool("sinfo"), "-h", "-N", "-o", "%t"], env=self.env,
                           capture_output=True, text=True)
    return state.returncode == 0 and state.stdout.strip() == "idle"

  @staticmethod
  def wait_for(condition, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
      if condition():
        return True
      time.sleep(0.2)
    return False

  def log(self, name):
    try:
      with open(os.path.join(self.folder, name)) as f:
        return f.read()[-1500:]
    except OSError as e:
      return str(e)

  def run(self, *args, timeout=300):
    return subprocess.run([self.tool(args[0])] + list(args[1:]), env=self.env,
                          capture_output=True, text=True, timeout=timeout)

  def stop(self):
    for daemon in reversed(self.daemons):
      daemon.send_signal(signal.SIGTERM)
    for daemon in reversed(self.daemons):
      try:
        daemon.wait(timeout=15)
      except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
    shutil.rmtree(self.folder, ignore_errors=True)


def train_processes(out):
  """Pids of train processes writing `out`."""
  pids = []
  for entry in os.listdir("/proc"):
    if not entry.isdigit():
      continue
    try:
      with open("/proc/%s/cmdline" % entry, "rb") as f:
        argv = f.read().split(b"\0")
    except OSError:
      continue
    if argv and argv[0].endswith(b"/train") and ("--out=" + out).encode() in argv:
      pids.append(int(entry))
  return pids


class SlurmTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.cluster = SlurmCluster()
    cls.why_not = cls.cluster.start()
    cls.tmp = support.temp_dir("slurm")
    cls.config = support.write_config(cls.tmp, "two_worker", CONFIG)

  @classmethod
  def tearDownClass(cls):
    cls.cluster.stop()

  def setUp(self):
    if self.why_not:
      print("SKIPPED: Slurm could not start here: " + self.why_not)
      self.skipTest(self.why_not)

  def srun(self, tasks, out, *flags):
    return self.cluster.run("srun", "-n", str(tasks), "--label", "--kill-on-bad-exit=1",
                            support.TRAIN, "--config=" + self.config, "--out=" + out, *flags)

  def uninterrupted(self):
    out = os.path.join(self.tmp, "uninterrupted")
    if not os.path.exists(os.path.join(out, "finished.json")):
      result = self.srun(2, out)
      self.assertEqual(result.returncode, 0, result.stdout[-3000:] + result.stderr[-3000:])
    return out

  def test_srun_two_tasks_train_two_workers_with_parity(self):
    out = self.uninterrupted()
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity)
    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(summary["world_size"], 2)
    self.assertEqual(len(summary["timing"]), 2)

  def test_task_labels_show_two_ranks(self):
    out = os.path.join(self.tmp, "labels")
    result = self.srun(2, out, "--validate_only")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    said = result.stdout + result.stderr
    self.assertRegex(said, r"(?m)^0: ")
    self.assertRegex(said, r"(?m)^1: ")

  def test_a_killed_rank_ends_the_job_and_the_rerun_resumes(self):
    out = os.path.join(self.tmp, "killed")
    killed = self.srun(2, out, "--kill_rank=1", "--kill_point=mid_shard",
                       "--kill_generation=2")
    said = killed.stdout + killed.stderr
    self.assertNotEqual(killed.returncode, 0, said[-3000:])
    self.assertIn("rank 1 kills itself (SIGKILL) at mid_shard of generation 2", said)
    self.assertRegex(said, r"task 1: Killed")
    self.assertIn("run.survivors_go_on does not apply: this rank was started by srun", said)
    self.assertEqual(train_processes(out), [], "a rank outlived its job step")
    self.assertFalse(os.path.exists(os.path.join(out, "finished.json")))
    rerun = self.srun(2, out)
    said = rerun.stdout + rerun.stderr
    self.assertEqual(rerun.returncode, 0, said[-3000:])
    self.assertRegex(said, r"rank 1: resumed from .*gen-000001")
    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(summary["resumed_from_generation"], 1)
    reference = support.load(os.path.join(self.uninterrupted(), "run_summary.json"))
    self.assertEqual(summary["final_parameter_hash"], reference["final_parameter_hash"])
    self.assertTrue(support.load(os.path.join(out, "parity.json"))["pass"])

  def test_the_readme_sbatch_script_trains(self):
    out = os.path.join(self.tmp, "sbatch")
    log = os.path.join(self.tmp, "sbatch.log")
    env = dict(self.cluster.env, TRAIN=support.TRAIN)
    result = subprocess.run(
        [self.cluster.tool("sbatch"), "--wait", "--output=" + log, "--chdir=" + self.tmp,
         SBATCH_SCRIPT, self.config, out], env=env, capture_output=True, text=True,
        timeout=300)
    with open(log) as f:
      job_log = f.read()
    self.assertEqual(result.returncode, 0, result.stderr + job_log[-3000:])
    self.assertIn("parity PASSED", job_log)
    self.assertTrue(support.load(os.path.join(out, "parity.json"))["pass"])

  def test_a_task_count_that_is_not_the_world_size_exits_2(self):
    out = os.path.join(self.tmp, "three")
    result = self.srun(3, out)
    said = result.stdout + result.stderr
    self.assertNotEqual(result.returncode, 0)
    self.assertRegex(said, r"exit code 2")
    self.assertRegex(said, r"SLURM_NTASKS=3 but .*two_worker\.pbtxt:\d+:\d+: world_size is 2")
    self.assertFalse(os.path.exists(os.path.join(out, "checkpoints")))


if __name__ == "__main__":
  unittest.main()
