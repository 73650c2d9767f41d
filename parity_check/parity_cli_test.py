#!/usr/bin/python3
"""//parity_check:parity as a user runs it: the one-process, SIMULATED check."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

PARITY = os.path.abspath(sys.argv.pop(1))
KEYS = ("simulated", "note", "split", "world_size", "weighting", "reducer",
        "rtol", "atol", "partition_matched", "bitwise_equal", "pass",
        "gradients", "max_abs_diff", "max_rel_diff")


def run(config, *flags):
  out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
  result = subprocess.run([PARITY, "--config=" + config, "--out=" + out, *flags],
                          capture_output=True, text=True, timeout=120)
  report = None
  if os.path.exists(os.path.join(out, "parity.json")):
    with open(os.path.join(out, "parity.json")) as f:
      report = json.load(f)
  return result, report


class ParityCliTest(unittest.TestCase):

  def test_keyed_dropout_passes_a_3_1_split(self):
    """Issue 25: the shipped keyed-dropout config, its masks keyed by the
    example and the update, gives the one-worker gradient on 3+1."""
    result, report = run("configs/two_worker_keyed_dropout.pbtxt", "--split=3,1")
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    self.assertTrue(report["pass"], report.get("failures"))
    self.assertEqual(report["split"], [3, 1])

  def test_global_count_passes_every_split_and_says_it_is_simulated(self):
    for split in ("3,1", "2,2", "1,3", "4,0", "2,1,1", "5,0,2,1"):
      result, report = run("configs/one_worker.pbtxt", "--split=" + split)
      self.assertEqual(result.returncode, 0, split + result.stdout + result.stderr)
      self.assertIn("SIMULATED", result.stdout)
      for key in KEYS:
        self.assertIn(key, report)
      self.assertTrue(report["simulated"])
      self.assertIn("simulated", report["note"])
      self.assertEqual(report["split"], [int(n) for n in split.split(",")])
      self.assertTrue(report["pass"])
      self.assertEqual(report["rtol"], 1e-6)
      self.assertEqual(report["atol"], 1e-7)
      self.assertIn("atol + rtol * |ref|", report["pass_rule"])
      self.assertIn("simulated update", report["reducer_stats_scope"])
      self.assertEqual(len(report["config_fingerprint"]), 40)
      self.assertEqual(report["attempt"], 1)

  def test_it_prints_the_tolerance_it_used_and_what_it_trains(self):
    """Issue 47 item 4: a derived atol (synchronized batch norm) is the one
    printed, and a config whose own update is another (bf16, two
    micro-batches, a global batch of 32) is named as not trained here."""
    result, report = run("configs/two_worker_all_recipes.pbtxt", "--split=3,1")
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    self.assertIn("tolerance used: rtol %g, atol %g; derived (synchronized batch norm)"
                  % (report["rtol"], report["atol"]), result.stdout)
    self.assertGreater(report["atol"], 1e-7)
    self.assertIn("it trains one fp32 update of 4 examples (split 3+1, one micro-batch a "
                  "rank), not the config's own (global batch 32, 2 micro-batch(es), bf16)",
                  result.stdout)
    result, _ = run("configs/one_worker.pbtxt", "--split=2,2", "--set", "global_batch=4")
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    self.assertIn("(split 2+2, one micro-batch a rank), the config's own update", result.stdout)

  def test_rank_mean_with_rank_average_fails_with_exit_3(self):
    result, report = run("configs/two_worker_rank_mean_wrong.pbtxt", "--split=3,1")
    self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
    self.assertFalse(report["pass"])
    self.assertEqual(report["weighting"], "rank_mean")
    self.assertEqual(report["reducer"], "rank_average")
    self.assertGreater(report["max_abs_diff"], 1e-3)

  def test_partition_matched_two_ranks_is_bitwise_equal(self):
    result, report = run("configs/one_worker.pbtxt", "--split=3,1",
                         "--partition_matched")
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    self.assertTrue(report["partition_matched"])
    self.assertTrue(report["bitwise_equal"])
    self.assertEqual(report["max_abs_diff"], 0)

  def config_with(self, extra, replace=("", "")):
    with open("configs/one_worker.pbtxt") as f:
      text = f.read().replace(*replace) + extra
    path = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "c.pbtxt")
    with open(path, "w") as f:
      f.write(text)
    return path

  def test_zero_tolerances_ask_for_exact_equality(self):
    config = self.config_with("parity { rtol: 0 atol: 0 }\n")
    result, report = run(config, "--split=3,1", "--partition_matched")
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    self.assertEqual(report["rtol"], 0)
    self.assertEqual(report["atol"], 0)
    self.assertTrue(report["bitwise_equal"])
    self.assertTrue(report["pass"])

  def test_a_bad_plugin_is_refused_before_any_data(self):
    config = self.config_with("", replace=('reducer { name: "allreduce_sum" }',
                                           'reducer { name: "nope" }'))
    result, report = run(config, "--split=3,1")
    self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
    self.assertIn("reducer.name: no reducer plugin named 'nope'", result.stderr)
    self.assertIsNone(report)

  def test_set_overrides_the_config_as_train_does(self):
    """Issue 30: --set FIELD_PATH=VALUE changes the checked config (its
    fingerprint is the effective config's); a bad override exits 2 naming
    itself and writes nothing."""
    _, base = run("configs/two_worker_rank_mean_wrong.pbtxt", "--split=3,1")
    result, report = run("configs/two_worker_rank_mean_wrong.pbtxt", "--split=3,1",
                         '--set=loss_weighting={ name: "global_count" }',
                         "--set", 'reducer={ name: "allreduce_sum" }')
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    self.assertTrue(report["pass"])
    self.assertEqual(report["weighting"], "global_count")
    self.assertEqual(report["reducer"], "allreduce_sum")
    self.assertNotEqual(report["config_fingerprint"], base["config_fingerprint"])
    for bad, needle in (("seeds.samplr=1", "--set seeds.samplr=1"),
                        ("parity.rtol=x", "--set parity.rtol=x"),
                        ('plugin_library=["missing.so"]', "--set plugin_library=[\"missing.so\"]")):
      result, report = run("configs/one_worker.pbtxt", "--split=3,1", "--set=" + bad)
      self.assertEqual(result.returncode, 2, bad + result.stdout + result.stderr)
      self.assertIn(needle, result.stderr)
      self.assertIsNone(report)

  def test_bad_split_is_refused(self):
    for split in ("3,x", "0,0", "-1,2", "100000,1"):
      result, report = run("configs/one_worker.pbtxt", "--split=" + split)
      self.assertEqual(result.returncode, 2, split + result.stderr)
      self.assertIn("--split", result.stderr)
      self.assertIsNone(report)


if __name__ == "__main__":
  unittest.main()
