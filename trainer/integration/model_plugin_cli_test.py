#!/usr/bin/python3
"""The model as a plugin kind, through the real train binary: both forms of
a built-in model are one model (fingerprint, model revision, a run folder
made with one form continued with the other), mixing them is refused naming
the field, and the plugin form's errors are located. (The example model
plugin, libmy_model.so: examples/plugins/plugins_cli_test.py.)"""
import os
import re
import subprocess
import sys
import unittest

import integration_support as support


ARCHITECTURE_FORM = 'model { architecture: "cnn" conv_channels: [4] hidden_units: [8] }'
PLUGIN_FORM = ('model { name: "cnn" options { [type.googleapis.com/receipt_parity.'
               'CnnModelOptions] { conv_channels: [4] hidden_units: [8] } } }')


def with_model(model, **kwargs):
  text = support.small_config(**kwargs)
  assert ARCHITECTURE_FORM in text
  return text.replace(ARCHITECTURE_FORM, model)


def fingerprint(config):
  result = support.run_train("--config=" + config, "--validate_only")
  assert result.returncode == 0, result.stderr
  return re.search(r"fingerprint ([0-9a-f]{40})", result.stdout).group(1)


class ModelFormsTest(unittest.TestCase):

  def setUp(self):
    self.tmp = support.temp_dir("forms")

  def config(self, name, text):
    return support.write(os.path.join(self.tmp, name), text)

  def test_both_forms_of_a_builtin_model_have_one_fingerprint_and_revision(self):
    old = self.config("old.pbtxt", support.small_config())
    new = self.config("new.pbtxt", with_model(PLUGIN_FORM))
    self.assertEqual(fingerprint(old), fingerprint(new))
    revisions = []
    for config in (old, new):
      out = os.path.join(self.tmp, os.path.basename(config) + ".out")
      result = support.run_train("--config=" + config, "--out=" + out)
      self.assertEqual(result.returncode, 0, result.stderr)
      revisions.append(support.load(os.path.join(out, "reference", "run_manifest.json"))
                       ["model_revision"])
    self.assertEqual(revisions[0], revisions[1])
    self.assertTrue(revisions[0]["revision"].startswith("cnn(conv=4;hidden=8;"))

  def test_a_run_folder_of_the_architecture_form_continues_with_the_plugin_form(self):
    checkpointed = dict(world=2, epochs=100, extra="checkpoint { every_updates: 2 }")
    old = self.config("old.pbtxt", support.small_config(run_extra="max_updates: 2",
                                                        **checkpointed))
    new = self.config("new.pbtxt", with_model(PLUGIN_FORM, run_extra="max_updates: 4",
                                              **checkpointed))
    out = os.path.join(self.tmp, "out")
    first = support.run_train("--config=" + old, "--out=" + out)
    self.assertEqual(first.returncode, 0, first.stderr[-3000:])
    second = support.run_train("--config=" + new, "--out=" + out)
    self.assertEqual(second.returncode, 0, second.stderr[-3000:])
    self.assertIn("CONTINUING it as attempt 2", second.stderr)
    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(summary["updates"], 2)
    self.assertEqual(summary["total_updates"], 4)

  def check_refused(self, model, token, expected):
    """`expected` after "CONFIG:LINE:COLUMN: ", where LINE:COLUMN is `token`'s
    place in the model's line."""
    text = with_model(model)
    config = self.config("bad.pbtxt", text)
    result = support.run_train("--config=" + config, "--validate_only")
    self.assertEqual(result.returncode, 2, result.stderr)
    lines = text.split("\n")
    line = next(i for i, l in enumerate(lines, 1) if l.startswith("model {"))
    column = lines[line - 1].index(token) + 1
    self.assertIn("%s:%d:%d: %s" % (config, line, column, expected), result.stderr)

  def test_mixing_the_forms_is_refused_naming_the_field(self):
    self.check_refused('model { architecture: "cnn" conv_channels: [4] name: "cnn" }',
                       "name:", "model.name: the plugin form (model.name \"cnn\", "
                       "model.options) cannot be mixed with the architecture form")
    self.check_refused('model { name: "cnn" conv_channels: [4] }', "conv_channels",
                       "model.conv_channels: conv_channels belongs to the "
                       "architecture form")

  def test_plugin_form_errors_name_the_plugin_or_its_options(self):
    self.check_refused('model { name: "resnet" }', "name:",
                       "model.name: no model plugin named 'resnet'; registered: "
                       "cnn, linear, mlp, python_module, torchscript")
    self.check_refused(PLUGIN_FORM.replace("conv_channels: [4]", "conv_channels: [0]"),
                       "options", "model.options: conv_channels: must be positive, got 0")
    self.check_refused(
        'model { name: "torchscript" options { [type.googleapis.com/receipt_parity.'
        'TorchScriptModelOptions] { path: "nothing_here.pt" } } }', "options",
        "model.options: path: %s: no such file"
        % os.path.normpath(os.path.join(os.path.abspath(self.tmp), "nothing_here.pt")))


class ShippedConfigTest(unittest.TestCase):

  def test_the_plugin_form_config_hashes_as_its_architecture_form(self):
    shipped = "configs/two_worker_model_plugin.pbtxt"
    with open(shipped) as f:
      text = f.read()
    architecture = re.search(r"#   (model \{ architecture: .*\})\n", text).group(1)
    rewritten = re.sub(r"\nmodel \{\n.*?\n\}\n", "\n" + architecture + "\n", text,
                       flags=re.S)
    self.assertNotEqual(rewritten, text)
    tmp = support.temp_dir("shipped")
    twin = support.write(os.path.join(tmp, "twin.pbtxt"), rewritten)
    self.assertEqual(fingerprint(shipped), fingerprint(twin))


if __name__ == "__main__":
  unittest.main()
