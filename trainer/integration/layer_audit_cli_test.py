#!/usr/bin/python3
"""The layer audit end to end: real runs of the trainer on a model with batch
norm (//trainer:train_with_test_plugins: `train` with the test model
plugin "test_batch_norm_cnn", a small CNN with BatchNorm2d "bn"), two worker
processes on an uneven split: refused before anything trains, or trained with the finding reported and a
failed parity that says why; the buffers compared across ranks. The real
`train` binary's built-in model audits clean."""
import os
import sys
import unittest

import integration_support as support

PLAIN_TRAIN = os.path.abspath(sys.argv.pop(1))

UNEVEN = "local_batch_sizes: [3, 1]"


# The test plugin linked into train_with_test_plugins.
BATCH_NORM_MODEL = 'name: "test_batch_norm_cnn"'
BUILT_IN_CNN = 'architecture: "cnn" conv_channels: [4] hidden_units: [8]'


def config(folder, extra="", world=2, model=BATCH_NORM_MODEL):
  return support.write(os.path.join(folder, "config.pbtxt"),
                       support.small_config(ids=24, world=world, extra=extra,
                                            model=model))


class BatchNormModelTest(unittest.TestCase):

  def test_report_trains_it_and_a_failed_parity_says_why(self):
    folder = support.temp_dir("bn-report-")
    out = os.path.join(folder, "out")
    result = support.run_train("--config=" + config(folder, UNEVEN), "--out=" + out)
    # Parity fails (exit 3), and the log says why, not only "fail".
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    self.assertIn("the layer audit says why", result.stderr)
    self.assertIn("bn (BatchNorm2d) is batch norm in training mode", result.stderr)

    parity = support.load(os.path.join(out, "parity.json"))
    self.assertFalse(parity["pass"])
    audit = parity["audit"]
    self.assertEqual(audit["policy"], "report")
    self.assertEqual([(f["module"], f["module_type"], f["kind"]) for f in audit["findings"]],
                     [("bn", "BatchNorm2d", "batch_norm_training")])
    self.assertIn("local batch statistics", audit["findings"][0]["effect"])
    why = [f for f in parity["failures"] if "batch norm in training mode" in f]
    self.assertEqual(len(why), 1, parity["failures"])
    self.assertIn("split 3+1, uneven", why[0])

    for manifest in ("run_manifest.json", "reference/run_manifest.json"):
      audit = support.load(os.path.join(out, manifest))["audit"]
      self.assertFalse(audit["clean"], manifest)
      self.assertEqual(audit["findings"][0]["module"], "bn", manifest)

    buffers = support.load(os.path.join(out, "run_summary.json"))["buffers"]
    self.assertEqual(buffers["compared"], 3)
    self.assertEqual(buffers["ranks"], 2)
    self.assertFalse(buffers["equal"])
    self.assertIn("bn.running_mean", buffers["differing"])
    self.assertGreater(buffers["max_abs_diff"], 0)
    self.assertIn("nothing reduces buffers", buffers["verdict"])
    reference = support.load(os.path.join(out, "reference/run_summary.json"))["buffers"]
    self.assertIn("one rank", reference["verdict"])

  def test_refuse_stops_before_anything_trains_naming_the_module(self):
    folder = support.temp_dir("bn-refuse-")
    out = os.path.join(folder, "out")
    path = config(folder, UNEVEN + '\nparity { batch_dependent_layers: "refuse" }')
    for args in (["--validate_only"], ["--out=" + out]):
      result = support.run_train("--config=" + path, *args)
      self.assertEqual(result.returncode, 2, result.stderr[-3000:])
      self.assertIn("parity.batch_dependent_layers: \"refuse\"", result.stderr)
      self.assertIn("bn (BatchNorm2d): batch norm in training mode", result.stderr)
    self.assertFalse(os.path.exists(os.path.join(out, "reference", "first_step.json")))
    self.assertFalse(os.path.exists(os.path.join(out, "parity.json")))

  def test_another_policy_is_a_config_error_naming_the_field(self):
    folder = support.temp_dir("bn-bad-")
    path = config(folder, 'parity { batch_dependent_layers: "ignore" }')
    result = support.run_train("--config=" + path, "--validate_only")
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn("parity.batch_dependent_layers: must be \"report\" or \"refuse\"",
                  result.stderr)


class BuiltInModelTest(unittest.TestCase):

  def test_the_built_in_cnn_audits_clean_and_has_no_buffers(self):
    folder = support.temp_dir("cnn-")
    out = os.path.join(folder, "out")
    saved = support.TRAIN
    support.TRAIN = PLAIN_TRAIN
    try:
      path = config(folder, 'parity { batch_dependent_layers: "refuse" }', world=1,
                    model=BUILT_IN_CNN)
      result = support.run_train("--config=" + path, "--out=" + out)
    finally:
      support.TRAIN = saved
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    audit = support.load(os.path.join(out, "reference/run_manifest.json"))["audit"]
    self.assertTrue(audit["clean"])
    self.assertEqual(audit.get("findings", []), [])
    buffers = support.load(os.path.join(out, "reference/run_summary.json"))["buffers"]
    self.assertEqual(buffers["verdict"], "the model has no buffers: nothing to compare")


if __name__ == "__main__":
  unittest.main()
