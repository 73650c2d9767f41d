#!/usr/bin/python3
"""examples/torchscript end to end: the Python script scripts and saves the
receipt model with the project's torch, the shipped two-worker config
trains it with two real worker processes (the local launcher), and the
artifacts show parity with the one-worker reference, the same first step
and the same final parameters on both ranks; a run stopped early and
continued from its checkpoints (parameters and buffers) ends where the
uninterrupted run does.

A model with keyed dropout (forward(images, keys)) passes parity on two
workers and resumes to the uninterrupted run's parameters; the same model
with nn.Dropout fails parity, the audit naming it.

Arguments: the train binary, the torch venv's python, make_receipt_model.py,
two_worker.pbtxt, two_worker_keyed_dropout.pbtxt.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TRAIN, PYTHON, SCRIPT, CONFIG, KEYED_CONFIG = (os.path.abspath(a) for a in sys.argv[1:6])
del sys.argv[1:6]


def load(path):
  with open(path) as f:
    return json.load(f)


def run(*command, cwd=None):
  env = {k: v for k, v in os.environ.items()
         if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
  return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd,
                        timeout=420)


class TorchScriptExampleTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = os.path.realpath(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")))
    cls.folder = os.path.join(cls.tmp, "examples", "torchscript")
    os.makedirs(cls.folder)
    cls.config = shutil.copy(CONFIG, os.path.join(cls.folder, "two_worker.pbtxt"))
    script = shutil.copy(SCRIPT, os.path.join(cls.folder, "make_receipt_model.py"))
    made = run(PYTHON, script)  # writes receipt_model.pt beside itself
    assert made.returncode == 0, made.stderr
    cls.made = made
    cls.module = os.path.join(cls.folder, "receipt_model.pt")
    cls.out = os.path.join(cls.tmp, "out")
    cls.trained = run(TRAIN, "--config=examples/torchscript/two_worker.pbtxt",
                      "--out=" + cls.out, cwd=cls.tmp)

  def test_two_workers_pass_parity_with_the_same_first_step_and_final_parameters(self):
    self.assertEqual(self.trained.returncode, 0, self.trained.stderr[-3000:])
    parity = load(os.path.join(self.out, "parity.json"))
    self.assertTrue(parity["pass"], parity.get("failures"))
    self.assertFalse(parity["simulated"])
    self.assertEqual(parity["world_size"], 2)
    self.assertTrue(parity["ranks_agree"])
    # The script module's parameters, by its own names.
    self.assertEqual([g["name"] for g in parity["gradients"]],
                     ["features.0.weight", "features.0.bias", "features.3.weight",
                      "features.3.bias", "head.weight", "head.bias", "out.weight",
                      "out.bias"])

    step = load(os.path.join(self.out, "first_step.json"))
    reference = load(os.path.join(self.out, "reference", "first_step.json"))
    self.assertEqual(step["parameter_order"], reference["parameter_order"])
    self.assertEqual(step["parameters_before"], reference["parameters_before"])
    self.assertEqual([len(b["receipt_ids"]) for b in step["batch"]], [4, 4])

    summary = load(os.path.join(self.out, "run_summary.json"))
    self.assertEqual(summary["parity"], "pass")
    self.assertEqual({r["rank"] for r in summary["per_rank"]}, {0, 1})
    # ranks_agree (above): every rank's final parameters hash as rank 0's.
    self.assertEqual(len(summary["final_parameter_hash"]), 40)

  def test_the_script_shows_that_torchscript_is_deprecated_upstream(self):
    self.assertIn("DeprecationWarning: `torch.jit.script` is deprecated", self.made.stderr)

  def test_the_model_revision_hashes_the_file_and_its_parameters(self):
    self.assertEqual(self.trained.returncode, 0, self.trained.stderr[-3000:])
    with open(self.module, "rb") as f:
      sha1 = hashlib.sha1(f.read()).hexdigest()
    manifest = load(os.path.join(self.out, "run_manifest.json"))
    reference = load(os.path.join(self.out, "reference", "run_manifest.json"))
    revision = manifest["model_revision"]
    self.assertEqual(revision["architecture"],
                     "torchscript(module=__torch__.ReceiptNet;file_sha1=%s;in=1x16x16;"
                     "classes=4)" % sha1)
    self.assertEqual(revision["revision"], revision["architecture"] + "@" +
                     revision["initial_parameter_hash"])
    self.assertEqual(revision, reference["model_revision"])

  def test_a_run_continued_from_its_checkpoints_ends_as_the_uninterrupted_one(self):
    self.assertEqual(self.trained.returncode, 0, self.trained.stderr[-3000:])
    with open(self.config) as f:
      text = f.read()
    stopped = os.path.join(self.folder, "stopped.pbtxt")
    with open(stopped, "w") as f:
      f.write(text.replace("run { ", "run { max_updates: 6 "))
    out = os.path.join(self.tmp, "continued")
    first = run(TRAIN, "--config=" + stopped, "--out=" + out)
    self.assertEqual(first.returncode, 0, first.stderr[-3000:])
    self.assertTrue(any(name.startswith("gen-")
                        for name in os.listdir(os.path.join(out, "checkpoints"))))
    second = run(TRAIN, "--config=" + self.config, "--out=" + out)
    self.assertEqual(second.returncode, 0, second.stderr[-3000:])
    self.assertIn("CONTINUING it as attempt 2", second.stderr)
    continued = load(os.path.join(out, "run_summary.json"))
    uninterrupted = load(os.path.join(self.out, "run_summary.json"))
    self.assertEqual(continued["final_parameter_hash"],
                     uninterrupted["final_parameter_hash"])

  def test_a_scripted_model_with_batch_norm_is_found_then_refused_or_reported(self):
    folder = os.path.join(self.tmp, "batch_norm")
    os.makedirs(folder)
    made = run(PYTHON, SCRIPT, "--batch_norm",
               "--out=" + os.path.join(folder, "receipt_model.pt"))
    self.assertEqual(made.returncode, 0, made.stderr)
    with open(CONFIG) as f:
      text = f.read().replace("run { ", "run { max_updates: 2 ")
    refuse = os.path.join(folder, "refuse.pbtxt")
    with open(refuse, "w") as f:
      f.write(text + 'parity { batch_dependent_layers: "refuse" }\n')
    refused = run(TRAIN, "--config=" + refuse, "--out=" + os.path.join(folder, "refused"))
    self.assertEqual(refused.returncode, 2, refused.stderr[-3000:])
    self.assertIn('parity.batch_dependent_layers: "refuse"', refused.stderr)
    self.assertIn("features.1", refused.stderr)
    self.assertFalse(os.path.exists(os.path.join(folder, "refused", "parity.json")))

    report = os.path.join(folder, "report.pbtxt")
    with open(report, "w") as f:
      f.write(text)
    out = os.path.join(folder, "reported")
    reported = run(TRAIN, "--config=" + report, "--out=" + out)
    # Local batch statistics: the two workers' first update is not the
    # reference's (exit 3), and parity.json says why.
    self.assertEqual(reported.returncode, 3, reported.stderr[-3000:])
    parity = load(os.path.join(out, "parity.json"))
    self.assertFalse(parity["pass"])
    findings = parity["audit"]["findings"]
    self.assertEqual(parity["audit"]["policy"], "report")
    self.assertIn("features.1", [f["module"] for f in findings])
    self.assertTrue(any("features.1" in failure and "batch norm" in failure
                        for failure in parity["failures"]), parity["failures"])
    manifest = load(os.path.join(out, "run_manifest.json"))
    self.assertFalse(manifest["audit"]["clean"])
    # Its running statistics are buffers, compared across ranks at the end.
    buffers = load(os.path.join(out, "run_summary.json"))["buffers"]
    self.assertIn("features.1.running_mean", buffers["differing"])
    # The example model itself audits clean.
    clean = load(os.path.join(self.out, "run_manifest.json"))["audit"]
    self.assertTrue(clean["clean"], clean)

  def test_keyed_dropout_keeps_parity_and_resumes_and_plain_dropout_breaks_it(self):
    folder = os.path.join(self.tmp, "keyed")
    os.makedirs(folder)
    made = run(PYTHON, SCRIPT, "--keyed_dropout=0.5",
               "--out=" + os.path.join(folder, "receipt_model_keyed_dropout.pt"))
    self.assertEqual(made.returncode, 0, made.stderr)
    config = shutil.copy(KEYED_CONFIG, os.path.join(folder, "two_worker_keyed_dropout.pbtxt"))
    out = os.path.join(folder, "out")
    keyed = run(TRAIN, "--config=" + config, "--out=" + out)
    self.assertEqual(keyed.returncode, 0, keyed.stderr[-3000:])
    parity = load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity.get("failures"))

    # Stopped after 6 updates and continued: the uninterrupted parameters.
    with open(config) as f:
      text = f.read()
    stopped = os.path.join(folder, "stopped.pbtxt")
    with open(stopped, "w") as f:
      f.write(text.replace("run { ", "run { max_updates: 6 "))
    continued = os.path.join(folder, "continued")
    for step in (stopped, config):
      result = run(TRAIN, "--config=" + step, "--out=" + continued)
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertEqual(load(os.path.join(continued, "run_summary.json"))["final_parameter_hash"],
                     load(os.path.join(out, "run_summary.json"))["final_parameter_hash"])

    # nn.Dropout in the same place: each rank draws its own mask.
    made = run(PYTHON, SCRIPT, "--dropout=0.5",
               "--out=" + os.path.join(folder, "receipt_model_keyed_dropout.pt"))
    self.assertEqual(made.returncode, 0, made.stderr)
    plain = os.path.join(folder, "plain")
    result = run(TRAIN, "--config=" + stopped, "--out=" + plain)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    parity = load(os.path.join(plain, "parity.json"))
    self.assertFalse(parity["pass"])
    self.assertEqual([(f["module"], f["kind"]) for f in parity["audit"]["findings"]],
                     [("drop", "dropout")])

  def test_a_file_that_is_not_a_module_is_refused_naming_it(self):
    folder = os.path.join(self.tmp, "corrupt")
    os.makedirs(folder)
    config = shutil.copy(CONFIG, os.path.join(folder, "two_worker.pbtxt"))
    with open(os.path.join(folder, "receipt_model.pt"), "wb") as f:
      f.write(b"not a module")
    result = run(TRAIN, "--config=" + config, "--validate_only")
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("model.options: path: %s: not a TorchScript module"
                  % os.path.join(folder, "receipt_model.pt"), result.stderr)


if __name__ == "__main__":
  unittest.main()
