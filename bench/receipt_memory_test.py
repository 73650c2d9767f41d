#!/usr/bin/python3
"""//bench:receipt_memory at a tiny size on a small two-worker config: both
sizes run both ways, the report has each rank's peak, the rounds alternate
their order, both targets are computed from the figures, and bad flags
exit 2. No timing or memory figure is asserted.

Arguments: the receipt_memory script, the train binary.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT, TRAIN = (os.path.abspath(p) for p in sys.argv[1:3])
del sys.argv[1:3]
sys.path.insert(0, os.path.join(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"], "trainer", "integration"))
import integration_support as support  # pylint: disable=wrong-import-position


class ReceiptMemoryTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    cls.config = support.write(os.path.join(cls.tmp, "base.pbtxt"),
                               support.small_config(world=2, epochs=1))

  def run_script(self, *flags):
    return subprocess.run([SCRIPT, TRAIN, *flags], capture_output=True, text=True, timeout=600)

  def test_both_sizes_both_ways_and_both_targets(self):
    out = os.path.join(self.tmp, "out")
    result = self.run_script(f"--config={self.config}", f"--study_config={self.config}",
                             "--sizes=30,60", "--rounds=2", f"--out={out}")
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    with open(os.path.join(out, "receipt_memory.json")) as f:
      report = json.load(f)
    self.assertEqual([(m["identities"], m["pixels"]) for m in report["memory"]],
                     [(30, "rendered"), (30, "held"), (60, "rendered"), (60, "held")])
    for m in report["memory"]:
      self.assertEqual(len(m["peak_rss_bytes_per_rank"]), 2)
      self.assertEqual(m["peak_rss_bytes"], max(m["peak_rss_bytes_per_rank"]))
      # The run really trained that many receipts, and held them as named.
      manifest = support.load(os.path.join(out, f"memory_{m['identities']}_{m['pixels']}",
                                           "run_manifest.json"))
      self.assertEqual(manifest["data"]["pixels"],
                       "rendered_on_demand" if m["pixels"] == "rendered" else "in_memory")
      self.assertEqual(manifest["data"]["train_identities"] +
                       manifest["data"]["validation_identities"], m["identities"])
    self.assertEqual([r["order"] for r in report["rounds"]],
                     [["held", "rendered"], ["rendered", "held"]])
    rendered = [m for m in report["memory"] if m["pixels"] == "rendered"]
    per_receipt = (rendered[1]["peak_rss_bytes"] - rendered[0]["peak_rss_bytes"]) / 30
    self.assertAlmostEqual(report["targets"][0]["measured"], per_receipt)
    for t in report["targets"]:
      line = next(l for l in result.stdout.splitlines() if t["target"] in l)
      self.assertEqual(line.split()[0], "MET" if t["met"] else "MISSED", line)

  def test_bad_flags_exit_2(self):
    no_ids = support.write(os.path.join(self.tmp, "no_ids.pbtxt"), "world_size: 2\n")
    for flags in (["--sizes=100"], ["--sizes=a,b"], ["--rounds=0"], [f"--config={no_ids}"],
                  ["--config=/nonexistent.pbtxt"]):
      result = self.run_script(*flags)
      self.assertEqual(result.returncode, 2, (flags, result.stderr))


if __name__ == "__main__":
  unittest.main()
