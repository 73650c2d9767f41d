#!/usr/bin/python3
"""//bench:audit_scaling at small sizes (above the audit's side-file
threshold): every size runs in its own process, the report has each run's
figures and the three targets, and bad flags exit 2. No timing is asserted.

Arguments: the audit_scaling script, the audit binary.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT, AUDIT = (os.path.abspath(p) for p in sys.argv[1:3])
del sys.argv[1:3]


class AuditScalingTest(unittest.TestCase):

  def test_prints_and_writes_every_size_and_target(self):
    out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    result = subprocess.run(
        [SCRIPT, AUDIT, f"--out={out}", "--ids=300000,150000", "--world_size=4"],
        capture_output=True, text=True, timeout=240)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn("sampler audit, 4 ranks", result.stdout)
    with open(os.path.join(out, "audit_scaling.json")) as f:
      report = json.load(f)
    self.assertEqual([r["num_ids"] for r in report["runs"]], [150000, 300000])
    for r in report["runs"]:
      self.assertGreater(r["seconds"], 0)
      self.assertGreater(r["peak_rss_bytes"], 0)
      # Above 100 000 slots: the slots are in the side file, 4 bytes each
      # and a bit, after a 40-byte header and one 16-byte record head per rank.
      self.assertEqual(r["slots_file_bytes"],
                       40 + 4 * 16 + 4 * r["num_ids"] + 4 * ((r["num_ids"] // 4 + 7) // 8))
      self.assertAlmostEqual(r["seconds_per_million_ids"], r["seconds"] / (r["num_ids"] / 1e6))
      self.assertTrue(os.path.exists(os.path.join(out, f"audit_{r['num_ids']}.slots")))
    self.assertEqual(len(report["targets"]), 3)
    for t in report["targets"]:
      want = (t["measured"] < t["threshold"] if t["comparison"] == "<"
              else t["measured"] <= t["threshold"])
      self.assertEqual(t["met"], want, t)
      self.assertIn(("MET " if t["met"] else "MISSED ") , result.stdout)

  def test_bad_flags_exit_2(self):
    for flags in (["--ids=abc"], ["--ids=0"], ["--world_size=0"]):
      result = subprocess.run([SCRIPT, AUDIT, *flags], capture_output=True, text=True)
      self.assertEqual(result.returncode, 2, (flags, result.stderr))
      self.assertIn(flags[0].split("=")[0], result.stderr)


if __name__ == "__main__":
  unittest.main()
