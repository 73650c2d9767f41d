#!/usr/bin/python3
"""examples/python_module end to end (issue 27): a team's plain PyTorch
nn.Module, trained by the C++ harness from its Python source in an
embedded interpreter, with two real worker processes (the local launcher)
and every proof unchanged:

  * two workers pass parity against the one-worker reference, the audit
    clean, both ranks' final parameters equal;
  * the fault drill SIGKILLs a rank at a random moment and the restart
    resumes bit for bit;
  * nn.Dropout in the module is named by the layer audit (parity fails,
    exit 3; refused up front with batch_dependent_layers "refuse"); the
    harness's KeyedDropout keeps parity and is listed parity-safe;
  * the harness's SyncBatchNorm2d keeps parity on an uneven split in
    micro-batches (its running statistics equal on both ranks), is listed
    parity-safe and resumes where the uninterrupted run ends; nn.BatchNorm2d
    in its place is named by the audit; layers numbered out of their
    forward order are refused at load;
  * a module that fails to import or to build, whose forward raises, or
    that gives the wrong shape is refused at load (exit 2) with the config's
    line and the Python traceback's last frames; a Python exception during
    training ends the run (exit 1) with the traceback, without a hang, and
    the run resumes from a verified generation.

Arguments: the train binary, the fault_drill binary, receipt_model.py,
two_worker.pbtxt, two_worker_keyed_dropout.pbtxt,
two_worker_sync_batch_norm.pbtxt.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TRAIN, DRILL, MODEL, CONFIG, KEYED_CONFIG, SYNC_CONFIG = (
    os.path.abspath(a) for a in sys.argv[1:7])
del sys.argv[1:7]


def load(path):
  with open(path) as f:
    return json.load(f)


def run(*command, cwd=None, timeout=420):
  env = {k: v for k, v in os.environ.items()
         if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
  return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd,
                        timeout=timeout)


def with_max_updates(text, updates):
  return text.replace("run { ", "run { max_updates: %d " % updates)


class PythonModuleExampleTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = os.path.realpath(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")))
    cls.folder = os.path.join(cls.tmp, "examples", "python_module")
    os.makedirs(cls.folder)
    shutil.copy(MODEL, os.path.join(cls.folder, "receipt_model.py"))
    cls.config = shutil.copy(CONFIG, os.path.join(cls.folder, "two_worker.pbtxt"))
    cls.out = os.path.join(cls.tmp, "out")
    cls.trained = run(TRAIN, "--config=examples/python_module/two_worker.pbtxt",
                      "--out=" + cls.out, cwd=cls.tmp)

  def write_config(self, name, text):
    path = os.path.join(self.folder, name)
    with open(path, "w") as f:
      f.write(text)
    return path

  def config_text(self):
    with open(self.config) as f:
      return f.read()

  def test_two_workers_pass_parity_with_a_clean_audit(self):
    self.assertEqual(self.trained.returncode, 0, self.trained.stderr[-3000:])
    parity = load(os.path.join(self.out, "parity.json"))
    self.assertTrue(parity["pass"], parity.get("failures"))
    self.assertTrue(parity["audit"]["clean"], parity["audit"])
    self.assertIn("Python module", parity["audit"]["method"])
    summary = load(os.path.join(self.out, "run_summary.json"))
    self.assertTrue(summary["buffers"]["equal"], summary["buffers"])
    manifest = load(os.path.join(self.out, "run_manifest.json"))
    revision = json.dumps(manifest)
    self.assertIn("python_module(receipt_model.py:ReceiptNet", revision)
    self.assertIn("source_sha1=", revision)
    # The trainer writes nothing beside the team's sources (no __pycache__).
    self.assertNotIn("__pycache__", os.listdir(self.folder))

  def test_the_kill_drill_resumes_bitwise(self):
    text = with_max_updates(self.config_text(), 12).replace(
        "checkpoint { every_updates: 4", "checkpoint { every_updates: 3")
    config = self.write_config("drill.pbtxt", text)
    out = os.path.join(self.tmp, "drill")
    result = run(DRILL, "--config=" + config, "--out=" + out, "--kill_at=random",
                 "--trials=1", "--seed=27", timeout=600)
    self.assertEqual(result.returncode, 0, result.stdout[-3000:] + result.stderr[-3000:])
    report = load(os.path.join(out, "recovery.json"))
    self.assertTrue(report["pass"], report["failures"])
    trial = report["trials"][0]
    self.assertEqual(trial["signal"], "SIGKILL")
    self.assertTrue(trial["final_parameters_equal"], trial)
    self.assertTrue(trial["bitwise_equal"], trial)

  def test_nn_dropout_is_named_by_the_audit(self):
    text = with_max_updates(self.config_text(), 4).replace(
        '"hidden": 32}', '"hidden": 32, "dropout": 0.3}')
    reported = run(TRAIN, "--config=" + self.write_config("dropout.pbtxt", text),
                   "--out=" + os.path.join(self.tmp, "dropout"))
    self.assertEqual(reported.returncode, 3, reported.stderr[-3000:])
    parity = load(os.path.join(self.tmp, "dropout", "parity.json"))
    self.assertFalse(parity["pass"])
    self.assertEqual([(f["module"], f["module_type"], f["kind"])
                      for f in parity["audit"]["findings"]], [("dropout", "Dropout", "dropout")])
    refuse = self.write_config(
        "dropout_refused.pbtxt", text + 'parity { batch_dependent_layers: "refuse" }\n')
    refused = run(TRAIN, "--config=" + refuse, "--out=" + os.path.join(self.tmp, "refused"))
    self.assertEqual(refused.returncode, 2, refused.stderr[-3000:])
    self.assertIn("dropout (Dropout)", refused.stderr)

  def test_keyed_dropout_keeps_parity_and_is_listed_parity_safe(self):
    config = shutil.copy(KEYED_CONFIG, os.path.join(self.folder, "keyed.pbtxt"))
    with open(config) as f:
      text = with_max_updates(f.read(), 6)
    out = os.path.join(self.tmp, "keyed")
    result = run(TRAIN, "--config=" + self.write_config("keyed.pbtxt", text), "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity.get("failures"))
    self.assertEqual([(f["module"], f["kind"]) for f in parity["audit"]["parity_safe"]],
                     [("keyed_dropout", "keyed_dropout")])
    self.assertTrue(parity["audit"]["clean"])

  def sync_config_text(self):
    with open(SYNC_CONFIG) as f:
      return f.read()

  def sync_run(self):
    """The sync batch norm example's whole run (12 updates), once."""
    cls = type(self)
    if not hasattr(cls, "synced"):
      cls.sync_out = os.path.join(cls.tmp, "sync")
      config = self.write_config("sync.pbtxt", self.sync_config_text())
      cls.synced = run(TRAIN, "--config=" + config, "--out=" + cls.sync_out)
    return cls.synced

  def test_sync_batch_norm_keeps_parity_on_an_uneven_split_in_micro_batches(self):
    result = self.sync_run()
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = load(os.path.join(self.sync_out, "parity.json"))
    self.assertTrue(parity["pass"], parity.get("failures"))
    self.assertEqual(parity["split"], [6, 2])
    self.assertEqual(parity["whole_run"]["mode"], "drift_budget")
    self.assertTrue(parity["whole_run"]["pass"], parity["whole_run"])
    self.assertIn("synchronized batch norm", parity["tolerance_reason"])
    self.assertIn("features.5.weight", [t["name"] for t in parity["gradients"]])
    self.assertEqual([(f["module"], f["module_type"], f["kind"])
                      for f in parity["audit"]["parity_safe"]],
                     [("features.1", "SyncBatchNorm2d", "sync_batch_norm"),
                      ("features.5", "SyncBatchNorm2d", "sync_batch_norm")])
    self.assertTrue(parity["audit"]["clean"], parity["audit"])
    buffers = load(os.path.join(self.sync_out, "run_summary.json"))["buffers"]
    self.assertTrue(buffers["equal"], buffers)
    # pixel_mean, and each batch norm's mean, var and count.
    self.assertEqual(buffers["compared"], 7)

  def test_sync_batch_norm_resumes_where_the_uninterrupted_run_ends(self):
    whole = self.sync_run()
    self.assertEqual(whole.returncode, 0, whole.stderr[-3000:])
    text = self.sync_config_text()
    out = os.path.join(self.tmp, "sync_part")
    stopped = run(TRAIN, "--config=" + self.write_config(
        "sync_part.pbtxt", with_max_updates(text, 5)), "--out=" + out)
    self.assertEqual(stopped.returncode, 0, stopped.stderr[-3000:])
    resumed = run(TRAIN, "--config=" + self.write_config("sync_rest.pbtxt", text),
                  "--out=" + out)
    self.assertEqual(resumed.returncode, 0, resumed.stderr[-3000:])
    # Its newest generation holds update 4 (checkpoints every 4 updates).
    self.assertIn("CONTINUING", resumed.stderr)
    self.assertIn("at update 4 (epoch 0", resumed.stderr)
    self.assertEqual(load(os.path.join(out, "run_summary.json"))["final_parameter_hash"],
                     load(os.path.join(self.sync_out, "run_summary.json"))["final_parameter_hash"])
    self.assertTrue(load(os.path.join(out, "parity.json"))["whole_run"]["pass"])
    # The last generations' shards (parameters, the batch norms' running
    # statistics, the optimizer) are byte for byte the uninterrupted run's.
    def newest_shards(folder):
      checkpoints = os.path.join(folder, "checkpoints")
      newest = os.path.join(checkpoints, sorted(os.listdir(checkpoints))[-1])
      return {name: open(os.path.join(newest, name), "rb").read()
              for name in os.listdir(newest) if name.startswith("shard-")}
    resumed_shards = newest_shards(out)
    self.assertEqual(len(resumed_shards), 2)
    self.assertTrue(resumed_shards == newest_shards(self.sync_out))

  def test_nn_batch_norm_in_its_place_is_named_by_the_audit(self):
    text = with_max_updates(self.sync_config_text(), 2).replace(
        '"hidden": 16}', '"hidden": 16, "sync": false}')
    out = os.path.join(self.tmp, "rank_bn")
    result = run(TRAIN, "--config=" + self.write_config("rank_bn.pbtxt", text), "--out=" + out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    parity = load(os.path.join(out, "parity.json"))
    self.assertFalse(parity["pass"])
    self.assertEqual([(f["module"], f["module_type"], f["kind"])
                      for f in parity["audit"]["findings"]],
                     [("features.1", "BatchNorm2d", "batch_norm_training"),
                      ("features.5", "BatchNorm2d", "batch_norm_training")])

  def test_sync_batch_norms_numbered_out_of_forward_order_are_refused(self):
    source = ("import torch\nfrom receipt_parity_layers import SyncBatchNorm2d\n\n"
              "class ReceiptNet(torch.nn.Module):\n"
              "  def __init__(self):\n    super().__init__()\n"
              "    self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)\n"
              "    self.late = SyncBatchNorm2d(2, 0)\n"
              "    self.early = SyncBatchNorm2d(2, 1)\n"
              "    self.head = torch.nn.Linear(512, 4)\n"
              "  def forward(self, images):\n%s")
    self.check_refused(
        source % "    return self.head(self.late(self.early(self.conv(images))).flatten(1))\n",
        "{}", "SyncBatchNorm2d layers must be numbered 0, 1, ... in the order forward "
        "reaches them", "a training forward reaches early (layer=1), late (layer=0)")
    self.check_refused(
        source % "    return self.head(self.early(self.conv(images)).flatten(1))\n",
        "{}", "a training forward never reaches late (layer=0)")

  def check_refused(self, source, kwargs, *expected):
    """A module in bad.py, refused at load with exit 2: the config's line
    (CONFIG:LINE:COLUMN: model.options: path: ...) and `expected`."""
    with open(os.path.join(self.folder, "bad.py"), "w") as f:
      f.write(source)
    text = self.config_text().replace('path: "receipt_model.py"', 'path: "bad.py"').replace(
        "kwargs_json: '{\"image_size\": 16, \"channels\": 8, \"hidden\": 32}'",
        "kwargs_json: '%s'" % kwargs)
    config = self.write_config("bad.pbtxt", text)
    result = run(TRAIN, "--config=" + config, "--out=" + os.path.join(self.tmp, "bad"))
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    line = next(i for i, l in enumerate(text.split("\n"), 1) if "options {" in l)
    self.assertIn("%s:%d:" % (config, line), result.stderr)
    self.assertIn("model.options: path: %s" % os.path.join(self.folder, "bad.py"),
                  result.stderr)
    for piece in expected:
      self.assertIn(piece, result.stderr)
    self.assertFalse(os.path.exists(os.path.join(self.tmp, "bad", "parity.json")))

  def test_a_module_that_fails_to_import_is_refused_with_the_traceback(self):
    self.check_refused("import torch\nimport team_layers_that_are_not_here\n", "{}",
                       "ModuleNotFoundError: No module named 'team_layers_that_are_not_here'",
                       "bad.py(2)")

  def test_a_module_that_fails_to_build_is_refused_with_the_traceback(self):
    self.check_refused(
        "import torch\n\ndef ReceiptNet(width):\n  raise ValueError('width %d is odd' % width)\n",
        '{"width": 3}', "ValueError: width 3 is odd", "bad.py(4): ReceiptNet")
    self.check_refused("import torch\n\nclass Net(torch.nn.Module):\n  pass\n",
                       '{"width": 3}', "has no 'ReceiptNet'")

  def test_a_forward_that_raises_or_gives_the_wrong_shape_is_refused(self):
    forward = ("import torch\n\nclass ReceiptNet(torch.nn.Module):\n"
               "  def __init__(self):\n    super().__init__()\n"
               "    self.w = torch.nn.Linear(256, %d)\n"
               "  def forward(self, images):\n%s")
    self.check_refused(forward % (4, "    raise RuntimeError('no receipts today')\n"), "{}",
                       "forward of a [2, 1, 16, 16] batch failed",
                       "RuntimeError: no receipts today", "bad.py(8): forward")
    self.check_refused(forward % (3, "    return self.w(images.flatten(1))\n"), "{}",
                       "maps a [2, 1, 16, 16] batch to Float [2, 3]")

  def test_a_python_exception_during_training_ends_the_run_and_it_resumes(self):
    # The module raises in its ninth training forward when the variable is
    # set: the same source and config (the same fingerprint) then resume.
    with open(MODEL) as f:
      source = f.read()
    source += (
        "\n\nimport os\n\n\nclass FailingNet(ReceiptNet):\n"
        "  calls = 0\n\n"
        "  def forward(self, images):\n"
        "    if self.training:\n"
        "      FailingNet.calls += 1\n"
        "      if FailingNet.calls == int(os.environ.get('FAIL_IN_FORWARD', '0')):\n"
        "        raise FloatingPointError('the team model blew up')\n"
        "    return super().forward(images)\n")
    with open(os.path.join(self.folder, "failing.py"), "w") as f:
      f.write(source)
    text = self.config_text().replace('path: "receipt_model.py"', 'path: "failing.py"').replace(
        'factory: "ReceiptNet"', 'factory: "FailingNet"')
    config = self.write_config("failing.pbtxt", text)
    out = os.path.join(self.tmp, "failing")
    env_before = os.environ.get("FAIL_IN_FORWARD")
    os.environ["FAIL_IN_FORWARD"] = "9"
    try:
      result = run(TRAIN, "--config=" + config, "--out=" + out, "--whole_run_parity=false",
                   timeout=300)
    finally:
      os.environ.pop("FAIL_IN_FORWARD")
    self.assertIsNone(env_before)
    self.assertEqual(result.returncode, 1, result.stderr[-3000:])
    self.assertIn("FloatingPointError: the team model blew up", result.stderr)
    self.assertIn("failing.py(", result.stderr)
    resumed = run(TRAIN, "--config=" + config, "--out=" + out, "--whole_run_parity=false")
    self.assertEqual(resumed.returncode, 0, resumed.stderr[-3000:])
    self.assertIn("RESUMING", resumed.stderr)
    # FailingNet builds and trains as ReceiptNet does: the run resumed from
    # a verified generation ends where the example's uninterrupted run does.
    self.assertEqual(load(os.path.join(out, "run_summary.json"))["final_parameter_hash"],
                     load(os.path.join(self.out, "run_summary.json"))["final_parameter_hash"])

if __name__ == "__main__":
  unittest.main()
