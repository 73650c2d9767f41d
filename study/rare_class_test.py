#!/usr/bin/python3
"""The study's rare class is visible: on the configs the study trains
(configs/one_worker.pbtxt, configs/two_worker_masked_tail.pbtxt), real runs of
//trainer:train give the rare `cropped` class at least 20 validation receipts
and an F1 of at least 0.8 with one worker and with two, while it stays rare
(at most 5 % of the receipt identities)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TRAIN = os.path.abspath(sys.argv.pop(1))
RARE = "cropped"
MIN_VALIDATION_RECEIPTS = 20
MIN_F1 = 0.8
MAX_RARE_SHARE = 0.05


def train(config):
  out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
  result = subprocess.run([TRAIN, "--config=" + config, "--out=" + out],
                          capture_output=True, text=True, timeout=600)
  if result.returncode != 0:
    raise AssertionError(f"{config}: exit {result.returncode}\n{result.stderr[-3000:]}")
  return out


def load(path):
  with open(path) as f:
    return json.load(f)


class RareClassTest(unittest.TestCase):

  def check_run(self, folder, what):
    validation = load(os.path.join(folder, "validation.json"))
    rows = {row["label"]: row for row in validation["per_class"]}
    self.assertIn(RARE, rows, what)
    rare = rows[RARE]
    self.assertGreaterEqual(rare["support"], MIN_VALIDATION_RECEIPTS, what)
    self.assertGreaterEqual(rare["f1"], MIN_F1, f"{what}: {rare}")

    manifest = load(os.path.join(folder, "run_manifest.json"))
    data = manifest["data"]
    rare_index = manifest["label_map"].index(RARE)
    views = data["train_examples"] / data["train_identities"]
    rare_identities = (data["train_class_counts"][rare_index] / views +
                       rare["support"])
    identities = data["train_identities"] + data["validation_identities"]
    self.assertLessEqual(rare_identities / identities, MAX_RARE_SHARE, what)
    return rare

  def test_rare_class_is_seen_by_one_and_by_two_workers(self):
    one = self.check_run(
        os.path.join(train("configs/one_worker.pbtxt"), "reference"), "one worker")
    two = self.check_run(train("configs/two_worker_masked_tail.pbtxt"),
                         "two workers")
    # The same validation receipts are counted once in both runs.
    self.assertEqual(one["support"], two["support"])


if __name__ == "__main__":
  unittest.main()
