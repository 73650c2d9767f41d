#!/usr/bin/python3
"""train --set FIELD_PATH=VALUE (issue 30) on real runs: overrides change
what trains (three real workers from a two-worker file), are recorded in
run_manifest.json with the effective config, make the fingerprint the
effective config's (the same as a file that writes those values), a run
folder resumes only with the same overrides, and a bad override exits 2
naming itself, with nothing written.

Argument: the train binary."""
import os
import re
import unittest

import integration_support as support

BASE = support.small_config(world=2, epochs=2, extra="checkpoint { every_updates: 2 }")


def fingerprint(result):
  match = re.search(r"fingerprint ([0-9a-f]{40})", result.stdout)
  assert match, result.stdout + result.stderr
  return match.group(1)


class ConfigOverridesTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("overrides")
    cls.config = support.write_config(cls.tmp, "base", BASE)

  def test_overrides_train_three_workers_and_are_recorded(self):
    out = os.path.join(self.tmp, "three")
    result = support.train(self.config, out, "--whole_run_parity=false",
                           "--set", "optimizer.sgd.learning_rate=0.1",
                           "--set=world_size=3", "--set", "global_batch=6",
                           "--set", "model.conv_channels=[4, 6]")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(len(summary["timing"]), 3)
    manifest = support.load(os.path.join(out, "run_manifest.json"))
    self.assertEqual(manifest["config_overrides"],
                     ["optimizer.sgd.learning_rate=0.1", "world_size=3", "global_batch=6",
                      "model.conv_channels=[4, 6]"])
    effective = manifest["effective_config"]
    self.assertEqual(effective["world_size"], 3)
    self.assertEqual(effective["optimizer"]["sgd"]["learning_rate"], 0.1)
    self.assertEqual(effective["model"]["conv_channels"], [4, 6])
    self.assertEqual(manifest["world_size"], 3)
    self.assertTrue(support.load(os.path.join(out, "parity.json"))["pass"])

  def test_the_fingerprint_is_the_effective_configs(self):
    overridden = support.run_train("--config=" + self.config, "--validate_only",
                                   "--set", "seeds.model_init=41")
    self.assertEqual(overridden.returncode, 0, overridden.stderr)
    written = support.write_config(self.tmp, "written",
                                   BASE.replace("model_init: 37", "model_init: 41"))
    as_file = support.run_train("--config=" + written, "--validate_only")
    plain = support.run_train("--config=" + self.config, "--validate_only")
    self.assertEqual(fingerprint(overridden), fingerprint(as_file))
    self.assertNotEqual(fingerprint(overridden), fingerprint(plain))

  def test_a_path_through_an_alias_form_sets_the_plugin_forms_option(self):
    # The shipped configs write the plugin forms; the README's sweep
    # command (optimizer.options.lr) and the older one through the sgd
    # alias (optimizer.sgd.learning_rate) set the same option, and both
    # are the config that writes the value.
    shipped = os.path.join(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"],
                           "configs", "two_worker_masked_tail.pbtxt")
    with open(shipped) as f:
      text = f.read()
    self.assertIn('name: "sgd"', text)
    written = support.write_config(self.tmp, "written", text.replace("lr: 0.01", "lr: 0.02")
                                   .replace("conv_channels: [32, 64, 128]",
                                            "conv_channels: [16, 32]"))
    new = support.run_train("--config=" + shipped, "--validate_only",
                            "--set", "optimizer.options.lr=0.02",
                            "--set", "model.options.conv_channels=[16,32]")
    old = support.run_train("--config=" + shipped, "--validate_only",
                            "--set", "optimizer.sgd.learning_rate=0.02",
                            "--set", "model.conv_channels=[16,32]")
    by_file = support.run_train("--config=" + written, "--validate_only")
    for result in (new, old, by_file):
      self.assertEqual(result.returncode, 0, result.stderr)
    self.assertEqual(fingerprint(new), fingerprint(by_file))
    self.assertEqual(fingerprint(old), fingerprint(by_file))

  def test_a_folder_resumes_only_with_the_same_overrides(self):
    out = os.path.join(self.tmp, "resumed")
    lr = ("--set", "optimizer.sgd.learning_rate=0.07")
    first = support.train(self.config, out, "--whole_run_parity=false", *lr,
                          "--set", "run.max_updates=4")
    self.assertEqual(first.returncode, 0, first.stderr[-2000:])
    other = support.train(self.config, out, "--whole_run_parity=false",
                          "--set", "optimizer.sgd.learning_rate=0.08")
    self.assertEqual(other.returncode, 2, other.stderr[-2000:])
    self.assertIn("learning_rate", other.stderr)
    again = support.train(self.config, out, "--whole_run_parity=false", *lr)
    self.assertEqual(again.returncode, 0, again.stderr[-2000:])
    self.assertIn("resum", again.stderr)
    state = support.load(os.path.join(out, "run_summary.json"))
    self.assertGreater(len(state["timing"][0]["update_seconds"]), 0)

  def test_bad_overrides_exit_2_naming_themselves(self):
    cases = (
        (["--set", "wrold_size=3"], "--set wrold_size=3: no field 'wrold_size' in the config; "
                                    "close names: world_size"),
        (["--set", "world_size=three"], "--set world_size=three: not a value of world_size"),
        (["--set", "optimizer.adamw.learning_rate=0.001"],
         "--set optimizer.adamw.learning_rate=0.001: conflicts with optimizer.sgd"),
        # Checked as the file is, the error located at the override.
        (["--set", "world_size=0"], "--set world_size=0: world_size: must be >= 1, got 0"),
        (["--set", "global_batch=5"], "--set global_batch=5: global_batch: 5 slots do not split "
                                      "evenly over 2 ranks"),
        # A library override is loaded in the file's stead, named at itself.
        (["--set", "plugin_library=[\"x.so\"]"], "--set plugin_library=[\"x.so\"]: plugin_library: "),
        (["--set"], "--set needs a value"),
        (["--set", "world_size"], "--set world_size: expected FIELD_PATH=VALUE"),
    )
    for flags, message in cases:
      out = os.path.join(self.tmp, "bad")
      result = support.train(self.config, out, *flags)
      self.assertEqual(result.returncode, 2, (flags, result.stderr[-2000:]))
      self.assertIn(message, result.stderr, flags)
      self.assertFalse(os.path.exists(out), flags)


if __name__ == "__main__":
  unittest.main()
