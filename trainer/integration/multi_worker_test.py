#!/usr/bin/python3
"""Real multi-worker runs: separate processes, a c10d Gloo process group,
the comparison with the one-worker reference. Nothing here is simulated.

Arguments: the train binary, the Python with the project's torch (torchrun)."""
import glob
import os
import signal
import subprocess
import sys
import time
import unittest

import integration_support as support

TORCH_PYTHON = os.path.abspath(sys.argv.pop(1))


def launch(tmp, name, **config):
  path = support.write(os.path.join(tmp, name + ".pbtxt"),
                       support.small_config(**config))
  out = os.path.join(tmp, name)
  return support.run_train("--config=" + path, "--out=" + out), out


class TwoWorkerTest(unittest.TestCase):

  def test_uneven_split_global_count_matches_the_reference(self):
    tmp = support.temp_dir("even")
    result, out = launch(tmp, "uneven", world=2,
                         extra="local_batch_sizes: [3, 1]")
    self.assertEqual(result.returncode, 0, result.stderr)
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    self.assertFalse(parity["simulated"])
    self.assertEqual(parity["split"], [3, 1])
    self.assertEqual(parity["world_size"], 2)
    self.assertTrue(parity["ranks_agree"])
    # conv0, fc0 and out: a weight and a bias each.
    self.assertEqual(len(parity["gradients"]), 6)
    self.assertEqual(len(parity["parameters_after_step"]), 6)
    for key in ("max_abs_diff", "max_rel_diff", "rtol", "atol", "weighting",
                "reducer"):
      self.assertIn(key, parity)
    step = support.load(os.path.join(out, "first_step.json"))
    self.assertEqual([len(b["receipt_ids"]) for b in step["batch"]], [3, 1])
    reference = support.load(os.path.join(out, "reference", "first_step.json"))
    self.assertEqual(
        sorted(i for b in step["batch"] for i in b["receipt_ids"]),
        sorted(reference["batch"][0]["receipt_ids"]))

    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(summary["world_size"], 2)
    self.assertEqual(summary["parity"], "pass")
    epoch = summary["epochs"][0]
    self.assertEqual(epoch["accepted_examples"], epoch["training_views"])
    self.assertTrue(epoch["every_view_once"])
    self.assertEqual({r["rank"] for r in summary["per_rank"]}, {0, 1})
    validation = support.load(os.path.join(out, "validation.json"))
    for key in ("accuracy", "per_class", "confusion_matrix",
                "predictions_gathered", "unique_ids_counted",
                "duplicates_dropped"):
      self.assertIn(key, validation)

  def test_rank_mean_with_rank_average_fails_parity_and_says_by_how_much(self):
    tmp = support.temp_dir("wrong")
    result, out = launch(tmp, "wrong", world=2, weighting="rank_mean",
                         reducer="rank_average",
                         extra="local_batch_sizes: [3, 1]")
    self.assertEqual(result.returncode, 3, result.stderr)
    self.assertIn("parity FAILED", result.stderr)
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertFalse(parity["pass"])
    self.assertGreater(parity["max_abs_diff"], 1e-4)
    self.assertTrue(any("differs by up to" in f for f in parity["failures"]))

  def test_rank_mean_with_an_even_split_is_indistinguishable(self):
    tmp = support.temp_dir("evenwrong")
    result, out = launch(tmp, "evenwrong", world=2, weighting="rank_mean",
                         reducer="rank_average", ids=42, val=0.0)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertTrue(support.load(os.path.join(out, "parity.json"))["pass"])


  def test_the_launcher_gives_workers_the_configs_master_addr(self):
    tmp = support.temp_dir("addr")
    result, out = launch(tmp, "addr", world=2, run_extra='master_addr: "localhost"')
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn("MASTER_ADDR=localhost ", result.stderr)
    for rank in (0, 1):
      self.assertIn("rank %d/2: joined the Gloo process group at localhost:" % rank,
                    result.stderr)
    self.assertTrue(support.load(os.path.join(out, "parity.json"))["pass"])


class ThreeRankTest(unittest.TestCase):

  def test_47_training_ids_on_3_ranks_masked_tail(self):
    tmp = support.temp_dir("three")
    out = os.path.join(tmp, "out")
    result = support.run_train("--config=configs/three_worker_47_ids.pbtxt",
                               "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr)
    summary = support.load(os.path.join(out, "run_summary.json"))
    epoch = summary["epochs"][0]
    self.assertEqual(epoch["training_views"], 47)
    self.assertEqual(epoch["accepted_examples"], 47)
    self.assertEqual(epoch["masked_slots"], 1)
    self.assertEqual(epoch["duplicate_slots"], 0)
    self.assertEqual(sum(r["slots"] for r in summary["per_rank"]), 48)
    self.assertTrue(support.load(os.path.join(out, "parity.json"))["pass"])

  def test_duplicate_pad_validation_counts_47_ids_once(self):
    tmp = support.temp_dir("dedup")
    for dedup, counted, dropped in (("by_receipt_id", 47, 1), ("none", 48, 0)):
      result, out = launch(tmp, dedup, ids=92, val=0.5, world=3, batch=3,
                           sampler="duplicate_pad", dedup=dedup)
      self.assertEqual(result.returncode, 0, result.stderr)
      validation = support.load(os.path.join(out, "validation.json"))
      self.assertEqual(validation["predictions_gathered"], 48)
      self.assertEqual(validation["predictions_counted"], counted)
      self.assertEqual(validation["duplicates_dropped"], dropped)
      self.assertEqual(validation["unique_ids_counted"], 47)
      support_total = sum(c["support"] for c in validation["per_class"])
      self.assertEqual(support_total, counted)

  def test_streamed_merge_writes_the_gathered_validation_json(self):
    tmp = support.temp_dir("merge")
    reports = {}
    for merge in ("gathered", "streamed", "auto"):
      options = 'merge: "%s" chunk_rows: 2 streamed_from: 10' % merge
      text = support.small_config(ids=92, val=0.5, world=3, batch=3,
                                  sampler="duplicate_pad").replace(
          'metric_dedup { name: "by_receipt_id" }',
          'metric_dedup { name: "by_receipt_id" options { '
          '[type.googleapis.com/receipt_parity.ByReceiptIdOptions] { %s } } }' % options)
      path = support.write(os.path.join(tmp, merge + ".pbtxt"), text)
      out = os.path.join(tmp, merge)
      result = support.run_train("--config=" + path, "--out=" + out)
      self.assertEqual(result.returncode, 0, result.stderr)
      streamed = "counted by the streamed merge in chunks of 2" in result.stderr
      self.assertEqual(streamed, merge != "gathered", result.stderr)
      validation = support.load(os.path.join(out, "validation.json"))
      self.assertEqual(validation["unique_ids_counted"], 47)
      self.assertEqual(validation["duplicates_dropped"], 1)
      self.assertEqual(len(validation["predictions"]), 47)
      del validation["config_fingerprint"]
      reports[merge] = validation
    self.assertEqual(reports["streamed"], reports["gathered"])
    self.assertEqual(reports["auto"], reports["gathered"])


class WorldSizeChangeTest(unittest.TestCase):

  def test_resuming_two_worker_checkpoints_with_three_workers(self):
    tmp = support.temp_dir("resize")
    out = os.path.join(tmp, "out")
    common = dict(ids=47, val=0.0, batch=6, epochs=1)
    two = support.write(os.path.join(tmp, "two.pbtxt"), support.small_config(
        world=2, run_extra="max_updates: 3",
        extra="checkpoint { every_updates: 3 }", **common))
    result = support.run_train("--config=" + two, "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr)

    three = support.small_config(world=3, extra="checkpoint { every_updates: 3 }", **common)
    refused = support.write(os.path.join(tmp, "three.pbtxt"), three)
    result = support.run_train("--config=" + refused, "--out=" + out)
    self.assertNotEqual(result.returncode, 0)
    self.assertIn("was written by 2 ranks; this run has 3", result.stderr)
    self.assertIn("allow_world_size_change", result.stderr)

    allowed = support.write(os.path.join(tmp, "three_allowed.pbtxt"), three.replace(
        "checkpoint { every_updates: 3 }",
        "checkpoint { every_updates: 3 allow_world_size_change: true }"))
    result = support.run_train("--config=" + allowed, "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr)
    resume = support.load(os.path.join(out, "resume.json"))
    self.assertTrue(resume["world_size_changed"])
    self.assertEqual(resume["saved_world_size"], 2)
    self.assertEqual(resume["update"], 3)
    change = support.load(os.path.join(out, "world_size_change.json"))
    self.assertEqual(change["old_world_size"], 2)
    self.assertEqual(change["new_world_size"], 3)
    self.assertEqual(change["num_ids"], 47)
    self.assertEqual(change["seen_before"], 18)
    self.assertEqual(len(change["new_remaining"]), 3)
    self.assertEqual(sum(len(r["receipt_ids"]) for r in change["new_remaining"]), 30)
    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(summary["resumed_from_generation"], 1)
    self.assertEqual(summary["updates"], 5)


class FailureTest(unittest.TestCase):

  def test_a_killed_worker_stops_the_launcher_and_every_other_worker(self):
    tmp = support.temp_dir("kill")
    config = support.write(os.path.join(tmp, "long.pbtxt"),
                           support.small_config(world=2, epochs=100000))
    env = dict(os.environ)
    launcher = subprocess.Popen(
        [support.TRAIN, "--config=" + config, "--out=" + os.path.join(tmp, "o")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    workers = []
    deadline = time.time() + 60
    while len(workers) < 2 and time.time() < deadline:
      time.sleep(0.2)
      children = subprocess.run(["pgrep", "-P", str(launcher.pid)],
                                capture_output=True, text=True).stdout.split()
      workers = [int(p) for p in children]
    self.assertEqual(len(workers), 2, "the launcher never started 2 workers")
    time.sleep(2)  # let them join and train
    started = time.time()
    os.kill(max(workers), signal.SIGKILL)  # the second worker started: rank 1
    _, stderr = launcher.communicate(timeout=60)
    self.assertLess(time.time() - started, 40)
    self.assertNotEqual(launcher.returncode, 0)
    self.assertIn("rank 1 was killed by signal 9", stderr)
    for pid in workers:
      self.assertFalse(os.path.exists("/proc/%d/status" % pid) and
                       "zombie" not in open("/proc/%d/status" % pid).read(),
                       "worker %d still running" % pid)

  def run_two_ranks(self, tmp, config_a, config_b):
    port = str(support.free_port())
    procs = []
    for rank, config in ((0, config_a), (1, config_b)):
      env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
      procs.append(subprocess.Popen(
          [support.TRAIN, "--config=" + config, "--out=" + os.path.join(tmp, "o")],
          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    results = []
    for proc in procs:
      _, stderr = proc.communicate(timeout=120)
      results.append((proc.returncode, stderr))
    return results

  def test_ranks_with_other_operational_settings_are_refused_at_start(self):
    # Outside the fingerprint, yet they keep ranks in step: a different
    # checkpoint schedule would deadlock at the first save, a different
    # update limit at the end.
    base = support.small_config(world=2)
    for name, b_text, field in (
        ("ckpt", base + "checkpoint { every_updates: 3 }\n", "checkpoint"),
        ("limit", base.replace("log_every_updates: 1000",
                               "log_every_updates: 1000 max_updates: 2"), "max_updates"),
        ("timeout", base.replace("collective_timeout_seconds: 30",
                                 "collective_timeout_seconds: 31"),
         "collective_timeout_seconds")):
      tmp = support.temp_dir("lockstep_" + name)
      a = support.write(os.path.join(tmp, "a.pbtxt"),
                        base + ("checkpoint { every_updates: 2 }\n" if name == "ckpt" else ""))
      b = support.write(os.path.join(tmp, "b.pbtxt"), b_text)
      started = time.time()
      for code, stderr in self.run_two_ranks(tmp, a, b):
        self.assertNotEqual(code, 0, stderr[-2000:])
        self.assertIn("rank 1 differs from rank 0 in %s" % field, stderr)
      self.assertLess(time.time() - started, 25, name)  # at start, not at a timeout

  def test_a_rank_with_a_different_config_is_refused(self):
    tmp = support.temp_dir("mismatch")
    a = support.write(os.path.join(tmp, "a.pbtxt"), support.small_config(world=2))
    b = support.write(os.path.join(tmp, "b.pbtxt"),
                      support.small_config(world=2).replace("model_init: 37",
                                                            "model_init: 38"))
    for code, stderr in self.run_two_ranks(tmp, a, b):
      self.assertNotEqual(code, 0)
      self.assertIn("rank 1 differs from rank 0 in config_fingerprint", stderr)


class RunFolderLockTest(unittest.TestCase):

  def test_a_second_run_on_a_folder_in_use_is_refused_and_a_dead_holder_never_blocks(self):
    tmp = support.temp_dir("lock")
    out = os.path.join(tmp, "o")
    endless = support.write(os.path.join(tmp, "endless.pbtxt"),
                            support.small_config(world=2, epochs=100000))
    first = subprocess.Popen([support.TRAIN, "--config=" + endless, "--out=" + out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = os.path.join(out, "LOCK")
    deadline = time.time() + 60
    while time.time() < deadline and not (
        os.path.exists(lock) and "pid=%d" % first.pid in open(lock).read()):
      time.sleep(0.2)
    self.assertIn("pid=%d" % first.pid, open(lock).read())
    before = sorted(os.listdir(out))
    for config in (endless, support.write(os.path.join(tmp, "one.pbtxt"),
                                          support.small_config(world=1))):
      second = support.run_train("--config=" + config, "--out=" + out, timeout=60)
      self.assertEqual(second.returncode, 2, second.stderr[-2000:])
      self.assertIn("%s is in use by another run (host=" % out, second.stderr)
      self.assertIn("pid=%d" % first.pid, second.stderr)
    self.assertTrue(set(before) <= set(os.listdir(out)), "the refused runs touched the folder")
    self.assertIsNone(first.poll(), "the first run was disturbed")
    first.kill()  # SIGKILL: the launcher dies holding the lock
    first.communicate(timeout=60)
    # Its ranks die with it (PR_SET_PDEATHSIG); the LOCK file stays behind.
    self.assertTrue(os.path.exists(lock))
    short = support.write(os.path.join(tmp, "short.pbtxt"), support.small_config(
        world=2, epochs=100000, run_extra="max_updates: 2"))
    third = support.run_train("--config=" + short, "--out=" + out, timeout=120)
    self.assertEqual(third.returncode, 0, third.stderr[-2000:])


class RendezvousTimeoutTest(unittest.TestCase):
  """A rank whose peer never starts gives up after the configured timeout
  (10 s here), not twice it, on the store's host and on the other ranks."""

  def run_alone(self, rank):
    tmp = support.temp_dir("alone%d" % rank)
    config = support.write(os.path.join(tmp, "c.pbtxt"), support.small_config(
        world=2, run_extra="").replace("collective_timeout_seconds: 30",
                                       "collective_timeout_seconds: 10"))
    port = support.free_port()
    started = time.time()
    result = support.run_train(
        "--config=" + config, "--out=" + os.path.join(tmp, "o"),
        env={"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
             "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}, timeout=120)
    return result, time.time() - started, port

  def test_a_rank_without_its_store_gives_up_after_the_timeout(self):
    result, seconds, port = self.run_alone(1)
    self.assertEqual(result.returncode, 1, result.stderr[-2000:])
    self.assertIn("rank 1: cannot join the process group at 127.0.0.1:%d" % port,
                  result.stderr)
    self.assertIn("no store listens at 127.0.0.1:%d" % port, result.stderr)
    self.assertLess(seconds, 14)

  def test_the_store_host_gives_up_after_the_timeout_without_a_backtrace(self):
    result, seconds, port = self.run_alone(0)
    self.assertEqual(result.returncode, 1, result.stderr[-2000:])
    self.assertIn("rank 0: cannot join the process group at 127.0.0.1:%d" % port,
                  result.stderr)
    self.assertNotIn("frame #", result.stderr)
    # Rank 0 makes the reference (about a second) before it waits.
    self.assertLess(seconds, 17)


class TorchrunTest(unittest.TestCase):

  def test_the_same_binary_runs_under_torchrun_no_python(self):
    # torchrun of the project's torch 2.11; --no_python (2.x also spells it
    # --no-python). --redirects/--tee=2: the workers' stderr.
    tmp = support.temp_dir("torchrun")
    config = support.write(os.path.join(tmp, "t.pbtxt"),
                           support.small_config(world=2))
    out = os.path.join(tmp, "out")
    result = subprocess.run(
        [TORCH_PYTHON, "-m", "torch.distributed.run", "--nproc_per_node=2",
         "--master_port=%d" % support.free_port(), "--redirects=2", "--tee=2",
         "--no_python", support.TRAIN,
         "--config=" + config, "--out=" + out],
        capture_output=True, text=True, timeout=240)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    self.assertFalse(parity["simulated"])

  def test_an_elastic_restart_resumes_and_ends_where_an_uninterrupted_run_does(self):
    # A worker dies after a checkpoint; torchrun's agent (whose store
    # outlives the workers) restarts both; they must not read the first
    # attempt's keys, and must resume from the newest generation.
    tmp = support.temp_dir("elastic")
    config = support.write(os.path.join(tmp, "e.pbtxt"), support.small_config(
        ids=120, world=2, epochs=12) + "checkpoint { every_updates: 5 keep_last: 3 }\n")
    out = os.path.join(tmp, "out")
    torchrun = subprocess.Popen(
        [TORCH_PYTHON, "-m", "torch.distributed.run", "--nproc_per_node=2",
         "--max_restarts=1", "--master_port=%d" % support.free_port(),
         "--redirects=2", "--tee=2", "--no_python", support.TRAIN,
         "--config=" + config, "--out=" + out],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not glob.glob(
        os.path.join(out, "checkpoints", "gen-*", "MANIFEST")):
      time.sleep(0.05)
    rank1 = [pid for pid in self.children(torchrun.pid) if self.rank_of(pid) == "1"]
    self.assertEqual(len(rank1), 1, "no rank 1 worker to kill")
    os.kill(rank1[0], signal.SIGKILL)
    _, stderr = torchrun.communicate(timeout=240)
    self.assertEqual(torchrun.returncode, 0, stderr[-3000:])
    resume = support.load(os.path.join(out, "resume.json"))
    self.assertGreater(resume["generation"], 0, resume)
    uninterrupted = os.path.join(tmp, "uninterrupted")
    result = support.run_train("--config=" + config, "--out=" + uninterrupted)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    self.assertEqual(
        support.load(os.path.join(out, "run_summary.json"))["final_parameter_hash"],
        support.load(os.path.join(uninterrupted, "run_summary.json"))["final_parameter_hash"])

  @staticmethod
  def children(pid):
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]

  @staticmethod
  def rank_of(pid):
    try:
      with open("/proc/%d/environ" % pid, "rb") as f:
        for entry in f.read().split(b"\0"):
          if entry.startswith(b"RANK="):
            return entry[5:].decode()
    except OSError:
      pass
    return None


if __name__ == "__main__":
  unittest.main()
