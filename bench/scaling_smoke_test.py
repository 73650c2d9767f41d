#!/usr/bin/python3
"""//bench:scaling end to end at tiny sizes (--smoke): every piece runs for
real (the trainer, the bare LibTorch loop, the DDP script under the
project's torch), scaling.json has every model, run, ratio and target, and
bad input is refused with a message. No timing is asserted.

Arguments: the scaling binary, the bare step binary, the DDP script, the
Python with the project's torch.
"""
import json
import os
import subprocess
import sys
import tempfile
import shutil
import statistics
import unittest

SCALING, BARE, DDP, TORCH_PYTHON = (os.path.abspath(p) for p in sys.argv[1:5])
del sys.argv[1:5]

# Our two workers over MPI run where OpenMPI's mpirun is installed.
HAS_MPIRUN = shutil.which("mpirun") is not None
RUNS = ("ours_one_worker", "ours_two_workers", "ddp_one_worker",
        "ddp_two_workers", "bare_libtorch", "bare_two_processes",
        "ours_two_workers_buckets_overlap", "ours_two_workers_buckets_no_overlap",
        "ours_two_workers_accumulation_2", "ours_two_workers_accumulation_4",
        "ours_two_workers_ordered_sum", "ours_two_workers_checks_off",
        "ours_two_workers_torchscript", "ours_two_workers_python_module",
        "ours_three_workers", "ours_three_workers_ordered_sum", "ours_four_workers",
        "ours_four_workers_ordered_sum", "ours_two_workers_ordered_sum_whole_shares")
# --smoke runs it on the communication-bound model only.
MPI_RUNS = ("ours_two_workers_mpi", "ours_two_workers_mpi_checks_off") if HAS_MPIRUN else ()
WORLD = {"ours_one_worker": 1, "ours_two_workers": 2, "ddp_one_worker": 1,
         "ddp_two_workers": 2, "bare_libtorch": 1, "bare_two_processes": 2,
         "ours_two_workers_buckets_overlap": 2,
         "ours_two_workers_buckets_no_overlap": 2, "ours_two_workers_mpi": 2,
         "ours_two_workers_accumulation_2": 2, "ours_two_workers_accumulation_4": 2,
         "ours_two_workers_ordered_sum": 2, "ours_two_workers_torchscript": 2,
         "ours_two_workers_python_module": 2, "ours_two_workers_checks_off": 2,
         "ours_two_workers_mpi_checks_off": 2, "ours_three_workers": 3,
         "ours_three_workers_ordered_sum": 3, "ours_four_workers": 4,
         "ours_four_workers_ordered_sum": 4,
         "ours_two_workers_ordered_sum_whole_shares": 2}


def temp_dir():
  return tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))


def run(args, timeout=240):
  return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def ratio(a, b):
  return a / b if b > 0 else 0.0


class SmokeTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.out = temp_dir()
    # An override of the base config, as train takes it.
    cls.result = run([SCALING, "--smoke", f"--out={cls.out}", "--set", "seeds.sampler=4321"])

  def test_exits_zero_and_prints_the_table(self):
    self.assertEqual(self.result.returncode, 0, self.result.stderr + self.result.stdout)
    self.assertIn("SMOKE RUN", self.result.stdout)
    self.assertIn("targets (issue 7):", self.result.stdout)
    self.assertIn("targets (issue 13):", self.result.stdout)
    self.assertIn("targets (issue 46):", self.result.stdout)
    self.assertLess(self.result.stdout.index("targets (issue 7):"),
                    self.result.stdout.index("targets (issue 13):"))
    self.assertIn(os.path.join(self.out, "scaling.json"), self.result.stdout)

  def test_report_has_every_model_run_ratio_and_target(self):
    with open(os.path.join(self.out, "scaling.json")) as f:
      report = json.load(f)
    self.assertTrue(report["smoke"])
    self.assertEqual(report["rounds"], 1)
    self.assertTrue(report["load_average_before"])
    self.assertTrue(report["load_average_after"])
    self.assertEqual([m["name"] for m in report["models"]],
                     ["compute_bound", "communication_bound"])
    for m in report["models"]:
      self.assertGreater(m["parameter_count"], 0)
      for name in RUNS + (MPI_RUNS if m["name"] == "communication_bound" else ()):
        r = m[name]
        self.assertEqual(r["world_size"], WORLD[name], name)
        self.assertGreater(r["examples_per_second"], 0, name)
        self.assertGreater(r["median_update_seconds"], 0, name)
        self.assertEqual(len(r["peak_rss_mib"]), WORLD[name], name)
        self.assertTrue(all(v > 0 for v in r["peak_rss_mib"]), name)
        self.assertTrue(os.path.exists(r["log_path"]), name)
        self.assertTrue(os.path.exists(r["result_path"]), name)
        self.assertEqual(r["round_examples_per_second"], [r["examples_per_second"]], name)
      ours1, ours2 = m["ours_one_worker"], m["ours_two_workers"]
      ddp1, ddp2 = m["ddp_one_worker"], m["ddp_two_workers"]
      self.assertAlmostEqual(m["ours_scaling"], ratio(
          ours2["examples_per_second"], ours1["examples_per_second"]))
      self.assertAlmostEqual(m["ddp_scaling"], ratio(
          ddp2["examples_per_second"], ddp1["examples_per_second"]))
      self.assertAlmostEqual(m["ours_over_ddp_two_workers"], ratio(
          ours2["examples_per_second"], ddp2["examples_per_second"]))
      self.assertAlmostEqual(m["harness_over_bare_update_time"], ratio(
          ours1["median_update_seconds"], m["bare_libtorch"]["median_update_seconds"]))
      self.assertAlmostEqual(m["two_process_ceiling"], ratio(
          m["bare_two_processes"]["examples_per_second"],
          m["bare_libtorch"]["examples_per_second"]))
      self.assertAlmostEqual(m["rss_ratio_to_ddp"], ratio(
          max(ours2["peak_rss_mib"]), max(ddp2["peak_rss_mib"])))
      self.assertAlmostEqual(m["overlap_gain"], ratio(
          m["ours_two_workers_buckets_overlap"]["examples_per_second"],
          m["ours_two_workers_buckets_no_overlap"]["examples_per_second"]))
      self.assertEqual(m["overlap_buckets"], 4)
      # Accumulation 2 and 4 at the same global batch, over accumulation 1.
      for k in (2, 4):
        acc = m[f"ours_two_workers_accumulation_{k}"]
        self.assertAlmostEqual(m[f"accumulation_{k}_examples_per_second_ratio"], ratio(
            acc["examples_per_second"], ours2["examples_per_second"]))
        self.assertAlmostEqual(m[f"accumulation_{k}_peak_rss_ratio"], ratio(
            max(acc["peak_rss_mib"]), max(ours2["peak_rss_mib"])))
        with open(os.path.join(self.out, "configs",
                               f"{m['name']}_ours_2w_accumulation_{k}_r0.pbtxt")) as f:
          text = f.read()
        self.assertIn(f"accumulation_steps: {k}\n", text)
        self.assertIn(f"global_batch: {2 * m['batch_per_rank']}\n", text)
      # The ordered mode (issue 28): four chunks of half a rank's batch per
      # update; each rank's two chunks are a subtree of the ordered mode's
      # tree (issue 49), so a rank puts one gradient into the reduction.
      ordered = m["ours_two_workers_ordered_sum"]
      gradient_bytes = 4 * m["parameter_count"]
      # The last bucket carries the every-update checks' reports after the
      # gradients, in both modes: W ranks x 17 words x 4 float pieces.
      rider_bytes = 2 * 17 * 4 * 4
      self.assertEqual(ours2["bytes_reduced_per_update"], gradient_bytes + rider_bytes)
      self.assertEqual(ordered["bytes_reduced_per_update"], gradient_bytes + rider_bytes)
      self.assertAlmostEqual(m["ordered_sum_bytes_per_update_ratio"], 1.0)
      # The physical floor (issue 49, item 4): two bare steps at once plus
      # one shared-memory all-reduce of the gradient, where mpirun is.
      if HAS_MPIRUN:
        shm = m["shm_allreduce_seconds_gradient"]
        self.assertGreater(shm, 0)
        examples = 2 * m["batch_per_rank"]
        floor = examples / (examples / m["bare_two_processes"]["examples_per_second"] + shm)
        self.assertAlmostEqual(m["physical_floor_examples_per_second"], floor)
        if m["name"] == "communication_bound":
          self.assertAlmostEqual(m["ours_mpi_over_physical_floor"], ratio(
              m["ours_two_workers_mpi"]["examples_per_second"], floor))
      # One chunk a rank: the ordered reduction without extra chunk passes.
      whole = m["ours_two_workers_ordered_sum_whole_shares"]
      self.assertAlmostEqual(m["ordered_sum_whole_shares_examples_per_second_ratio"], ratio(
          whole["examples_per_second"], ours2["examples_per_second"]))
      with open(os.path.join(self.out, "configs",
                             f"{m['name']}_ours_2w_ordered_sum_whole_shares_r0.pbtxt")) as f:
        self.assertIn(f"chunk_slots: {m['batch_per_rank']}\n", f.read())
      # At three and four workers (2W chunks, each rank's two a subtree):
      # one gradient a rank too, and the examples/s side by side.
      for world, word in ((3, "three"), (4, "four")):
        plain, chunked = m[f"ours_{word}_workers"], m[f"ours_{word}_workers_ordered_sum"]
        rider = world * 17 * 4 * 4
        self.assertEqual(plain["bytes_reduced_per_update"], gradient_bytes + rider, world)
        self.assertEqual(chunked["bytes_reduced_per_update"], gradient_bytes + rider, world)
        self.assertAlmostEqual(m[f"ordered_sum_{world}w_bytes_per_update_ratio"], 1.0)
        self.assertAlmostEqual(m[f"ordered_sum_{world}w_examples_per_second_ratio"], ratio(
            chunked["examples_per_second"], plain["examples_per_second"]))
        with open(os.path.join(self.out, "configs",
                               f"{m['name']}_ours_{world}w_ordered_sum_r0.pbtxt")) as f:
          text = f.read()
        self.assertIn(f"global_batch: {world * m['batch_per_rank']}\n", text)
        self.assertIn(f"chunk_slots: {m['batch_per_rank'] // 2}\n", text)
      self.assertAlmostEqual(m["ordered_sum_examples_per_second_ratio"], ratio(
          ordered["examples_per_second"], ours2["examples_per_second"]))
      self.assertAlmostEqual(m["ordered_sum_peak_rss_ratio"], ratio(
          max(ordered["peak_rss_mib"]), max(ours2["peak_rss_mib"])))
      with open(os.path.join(self.out, "configs",
                             f"{m['name']}_ours_2w_ordered_sum_r0.pbtxt")) as f:
        text = f.read()
      self.assertIn('name: "ordered_sum"', text)
      self.assertIn(f"chunk_slots: {m['batch_per_rank'] // 2}\n", text)
      # The every-update checks (issue 46): their share of an update as the
      # run measured it, and the examples/s with them over without.
      off = m["ours_two_workers_checks_off"]
      self.assertGreater(ours2["check_share"], 0)
      self.assertGreater(ours2["check_seconds_per_update"], 0)
      self.assertEqual(off.get("check_share", 0), 0)
      self.assertAlmostEqual(m["every_update_examples_per_second_ratio"], ratio(
          ours2["examples_per_second"], off["examples_per_second"]))
      with open(os.path.join(self.out, "configs",
                             f"{m['name']}_ours_2w_checks_off_r0.pbtxt")) as f:
        self.assertIn("every_update: false", f.read())
      # The same layers as TorchScript and as a Python module (issue 27).
      for route, plugin in (("torchscript", "torchscript"),
                            ("python_module", "python_module")):
        routed = m[f"ours_two_workers_{route}"]
        self.assertAlmostEqual(m[f"{route}_examples_per_second_ratio"], ratio(
            routed["examples_per_second"], ours2["examples_per_second"]))
        self.assertAlmostEqual(m[f"{route}_peak_rss_ratio"], ratio(
            max(routed["peak_rss_mib"]), max(ours2["peak_rss_mib"])))
        with open(os.path.join(self.out, "configs",
                               f"{m['name']}_ours_2w_{route}_r0.pbtxt")) as f:
          text = f.read()
        self.assertIn(f'name: "{plugin}"', text)
        with open(os.path.join(os.path.dirname(routed["result_path"]),
                               "run_manifest.json")) as f:
          self.assertTrue(json.load(f)["model_revision"]["revision"].startswith(plugin + "("))
      # Synchronized against per-rank batch norm (issue 49), on the CNN
      # only: per-rank batch norm fails parity and trains to its end.
      if m["name"] == "compute_bound":
        for k, acc in ((1, ""), (2, "_accumulation_2"), (4, "_accumulation_4")):
          sync = m[f"ours_two_workers_sync_batch_norm{acc}"]
          per_rank = m[f"ours_two_workers_per_rank_batch_norm{acc}"]
          self.assertEqual(sync["updates"], per_rank["updates"])
          self.assertAlmostEqual(m[f"sync_batch_norm{acc}_examples_per_second_ratio"], ratio(
              sync["examples_per_second"], per_rank["examples_per_second"]))
          self.assertAlmostEqual(m[f"sync_batch_norm{acc}_peak_rss_ratio"], ratio(
              max(sync["peak_rss_mib"]), max(per_rank["peak_rss_mib"])))
          for norm, run in (("sync", sync), ("per_rank", per_rank)):
            with open(os.path.join(self.out, "configs",
                                   f"compute_bound_ours_2w_{norm}_batch_norm{acc}_r0.pbtxt")) as f:
              text = f.read()
            self.assertIn(f'batch_norm: "{norm}"', text)
            self.assertEqual(f"accumulation_steps: {k}\n" in text, k > 1)
            with open(os.path.join(os.path.dirname(run["result_path"]), "parity.json")) as f:
              self.assertEqual(json.load(f)["pass"], norm == "sync", norm + acc)
      else:
        self.assertNotIn("ours_two_workers_sync_batch_norm", m)
      # The replay of a checked update (issue 49, item 3): parity.json's
      # seconds, over two one-worker updates.
      with open(os.path.join(os.path.dirname(ours2["result_path"]), "parity.json")) as f:
        replayed = [u["seconds"] for u in json.load(f)["replay"]["updates"]
                    if u["mode"] != "not_replayed"]
      self.assertTrue(replayed)
      median = statistics.median(replayed)
      self.assertAlmostEqual(ours2["replay_seconds_per_checked_update"], median)
      self.assertAlmostEqual(m["replay_over_update_compute"], ratio(
          median, 2 * ours1["median_update_seconds"]))
      # One round: each ratio's spread is that one round.
      self.assertEqual(m["ours_scaling_spread"]["rounds"], [m["ours_scaling"]])
      # The reducer's all-reduces ran, so the two-worker run spent time in them.
      self.assertGreater(ours2["sync_seconds_per_update"], 0)
      self.assertGreater(m["allreduce_seconds_1kib"], 0)
      # Issue 13's ratios.
      self.assertAlmostEqual(m["ours_over_ceiling"], ratio(
          m["ours_scaling"], m["two_process_ceiling"]))
      self.assertAlmostEqual(m["rss_ratio_to_bare"], ratio(
          max(ours2["peak_rss_mib"]), max(m["bare_libtorch"]["peak_rss_mib"])))
      self.assertEqual(m["ours_over_ceiling_spread"]["rounds"], [m["ours_over_ceiling"]])
      self.assertEqual(m["rss_ratio_to_bare_spread"]["rounds"], [m["rss_ratio_to_bare"]])
      mpi_ratios = ("ours_mpi_scaling", "ours_mpi_over_ceiling", "rss_ratio_to_bare_mpi",
                    "ours_mpi_over_physical_floor")
      if MPI_RUNS and m["name"] == "communication_bound":
        mpi = m["ours_two_workers_mpi"]
        self.assertGreater(mpi["sync_seconds_per_update"], 0)
        self.assertAlmostEqual(m["ours_mpi_over_ddp_two_workers"], ratio(
            mpi["examples_per_second"], ddp2["examples_per_second"]))
        self.assertAlmostEqual(m["ours_mpi_scaling"], ratio(
            mpi["examples_per_second"], ours1["examples_per_second"]))
        self.assertAlmostEqual(m["ours_mpi_over_ceiling"], ratio(
            m["ours_mpi_scaling"], m["two_process_ceiling"]))
        self.assertAlmostEqual(m["rss_ratio_to_bare_mpi"], ratio(
            max(mpi["peak_rss_mib"]), max(m["bare_libtorch"]["peak_rss_mib"])))
        for name in mpi_ratios:
          self.assertGreater(m[name], 0, name)
          self.assertEqual(m[name + "_spread"]["rounds"], [m[name]], name)
      else:
        for name in mpi_ratios:
          self.assertEqual(m[name], 0, name)
          self.assertNotIn(name + "_spread", m, name)
    issue7 = [t for t in report["targets"] if t["issue"] == 7]
    self.assertEqual(len(issue7), 7)
    self.assertEqual(report["targets"][:7], issue7)
    issue13 = [(t["model"], t["target"]) for t in report["targets"] if t["issue"] == 13]
    issue49 = [(t["model"], t["target"]) for t in report["targets"] if t["issue"] == 49]
    self.assertEqual(len(issue7) + len(issue13) + len(issue49) +
                     sum(t["issue"] == 46 for t in report["targets"]), len(report["targets"]))
    replay = "replay of a checked update / the update's compute (two workers)"
    self.assertEqual(issue49, [
        ("compute_bound", "synchronized / per-rank batch norm examples/s, 1 micro-batch"),
        ("compute_bound", "synchronized / per-rank batch norm examples/s, 2 micro-batches"),
        ("compute_bound", "synchronized / per-rank batch norm examples/s, 4 micro-batches")] +
        [(model, f"{w}w, ordered_sum / allreduce_sum {what}")
         for model in ("compute_bound", "communication_bound") for w in (2, 3, 4)
         for what in ("examples/s", "bytes per update")] +
        [("communication_bound", "two workers over MPI / the physical floor (two bare steps "
          "+ one shared-memory all-reduce)")] * int(HAS_MPIRUN) +
        [("compute_bound", replay), ("communication_bound", replay)])
    rss = "peak RSS per rank / bare LibTorch step's (two workers)"
    harness = "harness per-update time / bare LibTorch step"
    self.assertEqual(issue13, [
        ("compute_bound", "two workers / one worker over the two-process ceiling"),
        ("compute_bound", harness), ("compute_bound", rss)] +
        [("communication_bound",
          "our two workers over MPI / PyTorch DDP two workers examples/s")] *
        int(HAS_MPIRUN) +
        [("communication_bound", "our two workers / PyTorch DDP two workers examples/s"),
         ("communication_bound", harness), ("communication_bound", rss)] +
        [("communication_bound",
          "peak RSS per rank / bare LibTorch step's (two workers over MPI)")] *
        int(HAS_MPIRUN))
    issue46 = [(t["model"], t["target"]) for t in report["targets"] if t["issue"] == 46]
    share = "the every-update checks' share of a two-worker update"
    on_off = "two workers with the every-update checks / without, examples/s"
    self.assertEqual(issue46, [
        ("compute_bound", share), ("compute_bound", on_off),
        ("communication_bound", share), ("communication_bound", on_off)] +
        [("communication_bound", share + " over MPI"),
         ("communication_bound",
          "two workers over MPI with the every-update checks / without, examples/s")] *
        int(HAS_MPIRUN))
    for t in report["targets"]:
      expected = (t["measured"] >= t["threshold"] if t["comparison"] == ">="
                  else t["measured"] <= t["threshold"])
      self.assertEqual(t["met"], expected, t)

  def test_generated_configs_run_the_trainer_as_planned(self):
    configs = sorted(os.listdir(os.path.join(self.out, "configs")))
    self.assertEqual(configs, sorted(
        [f"{m}_ours_{w}w_r0.pbtxt" for m in ("compute_bound", "communication_bound")
         for w in (1, 2, 3, 4)] +
        [f"{m}_ours_{w}w_ordered_sum_r0.pbtxt"
         for m in ("compute_bound", "communication_bound") for w in (3, 4)] +
        [f"{m}_ours_2w_buckets_{o}_r0.pbtxt"
         for m in ("compute_bound", "communication_bound")
         for o in ("overlap", "no_overlap")] +
        [f"{m}_ours_2w_accumulation_{k}_r0.pbtxt"
         for m in ("compute_bound", "communication_bound") for k in (2, 4)] +
        [f"{m}_ours_2w_{v}_r0.pbtxt"
         for m in ("compute_bound", "communication_bound")
         for v in ("ordered_sum", "ordered_sum_whole_shares", "checks_off")] +
        [f"{m}_ours_2w_{route}_r0.pbtxt"
         for m in ("compute_bound", "communication_bound")
         for route in ("torchscript", "python_module")] +
        [f"compute_bound_ours_2w_{norm}_batch_norm{acc}_r0.pbtxt"
         for norm in ("sync", "per_rank") for acc in ("", "_accumulation_2", "_accumulation_4")] +
        [f"communication_bound_ours_2w_{v}_r0.pbtxt"
         for v in ("mpi", "mpi_checks_off")] * int(HAS_MPIRUN)))
    # The overlap runs: allreduce_sum over a quarter of the gradient's bytes.
    for overlap in (True, False):
      name = "overlap" if overlap else "no_overlap"
      with open(os.path.join(self.out, "configs",
                             f"communication_bound_ours_2w_buckets_{name}_r0.pbtxt")) as f:
        text = f.read()
      self.assertIn('name: "allreduce_sum"', text)
      self.assertIn(f"bucket_cap_bytes: {251080 * 4 // 4}", text)
      self.assertIn(f"overlap_backward: {'true' if overlap else 'false'}", text)
    with open(os.path.join(self.out, "configs",
                           "communication_bound_ours_2w_r0.pbtxt")) as f:
      text = f.read()
    for line in ('architecture: "mlp"', "hidden_units: 244", "world_size: 2",
                 "global_batch: 64", "max_updates: 12", "intra_op_threads: 1",
                 "sampler: 4321"):
      self.assertIn(line, text)


class BadInputTest(unittest.TestCase):

  def test_unknown_model_is_refused(self):
    r = run([SCALING, "--smoke", f"--out={temp_dir()}", "--models=huge"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--models: unknown model 'huge'", r.stderr)
    self.assertIn("compute_bound", r.stderr)

  def test_broken_base_config_names_file_and_line(self):
    path = os.path.join(temp_dir(), "broken.pbtxt")
    with open(path, "w") as f:
      f.write("world_size: 1\nglobal_batch: [\n")
    r = run([SCALING, "--smoke", f"--out={temp_dir()}", f"--base_config={path}"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn(f"{path}:2:", r.stderr)

  def test_a_bad_override_is_refused_naming_it(self):
    r = run([SCALING, "--smoke", f"--out={temp_dir()}", "--set", "wrold_size=2"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--set wrold_size=2: no field 'wrold_size' in the config; close names: "
                  "world_size", r.stderr)

  def test_bad_numbers_are_refused(self):
    r = run([SCALING, f"--out={temp_dir()}", "--seconds_per_run=0"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--seconds_per_run", r.stderr)
    r = run([SCALING, f"--out={temp_dir()}", "--rounds=0"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--rounds", r.stderr)
    r = run([SCALING, f"--out={temp_dir()}", "--max_updates=5"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--max_updates", r.stderr)

  def test_a_failing_run_stops_the_benchmark_naming_it(self):
    out = temp_dir()
    r = run([SCALING, "--smoke", f"--out={out}", "--models=communication_bound",
             "--python=/bin/false"])
    self.assertEqual(r.returncode, 1, r.stderr)
    self.assertIn("FAILED (communication_bound)", r.stderr)
    self.assertIn("/bin/false", r.stderr)
    self.assertFalse(os.path.exists(os.path.join(out, "scaling.json")))

  def test_a_ddp_run_that_fails_once_is_run_once_more(self):
    out = temp_dir()
    mark = os.path.join(out, "failed-once")
    python = os.path.join(out, "python-failing-once")
    with open(python, "w") as f:
      # Only a DDP run fails (not the --script-to call that writes the
      # TorchScript model first).
      f.write(f"""#!/bin/sh
case "$*" in *--script-to=*) exec {TORCH_PYTHON} "$@";; esac
if [ ! -e {mark} ]; then touch {mark}; echo "terminate called" >&2; exit 134; fi
exec {TORCH_PYTHON} "$@"
""")
    os.chmod(python, 0o755)
    r = run([SCALING, "--smoke", f"--out={out}", "--models=communication_bound",
             f"--python={python}"])
    self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
    self.assertIn("once more", r.stdout)
    failed = [n for n in os.listdir(os.path.join(out, "logs")) if n.endswith(".log.failed")]
    # The failure made here; PyTorch's own random DDP aborts may add others
    # (only DDP's: our runs are never retried).
    self.assertIn("communication_bound_ddp_1w_r0.log.failed", failed)
    self.assertTrue(all("_ddp_" in n for n in failed), failed)
    with open(os.path.join(out, "logs", "communication_bound_ddp_1w_r0.log.failed")) as f:
      self.assertIn("terminate called", f.read())
    with open(os.path.join(out, "scaling.json")) as f:
      report = json.load(f)
    self.assertGreater(report["models"][0]["ddp_one_worker"]["examples_per_second"], 0)

  def test_bare_step_refuses_a_bad_model_and_sizes(self):
    r = run([BARE, '--model=architecture: "rnn"'])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("model.architecture", r.stderr)
    r = run([BARE, "--model=architecture: [", "--updates=1"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--model", r.stderr)
    r = run([BARE, '--model=architecture: "mlp"', "--batch=0"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--batch", r.stderr)

  def test_ddp_script_refuses_a_cnn_without_convs(self):
    r = run([TORCH_PYTHON, DDP, "--architecture=cnn", "--updates=3"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--conv-channels", r.stderr)
    r = run([TORCH_PYTHON, DDP, "--architecture=mlp", "--hidden-units=8,x",
             "--updates=3"])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertIn("--hidden-units", r.stderr)


if __name__ == "__main__":
  unittest.main()
