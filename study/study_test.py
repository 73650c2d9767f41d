#!/usr/bin/python3
"""The whole study as ./run.sh runs it: the real //study:study binary,
every stage a child process found in its runfiles, into a fresh folder. It
exits 0 and leaves every artifact the design names (docs/design.md,
"Artifacts of a study"), each JSON one readable, with the two verdicts
passing. This is what catches a program the study cannot find any more."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

STUDY = os.path.abspath(sys.argv.pop(1))

ARTIFACTS = [
    "reference/run_manifest.json", "reference/first_step.json", "first_step.json",
    "parity.json", "sampler_audit.json", "validation.json", "failure_trace.log",
    "recovery.json", "trade_report.json", "trade_report.md", "trade_report.svg",
]


class StudyTest(unittest.TestCase):

  def test_the_study_runs_every_stage_and_writes_every_artifact(self):
    out = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "study")
    result = subprocess.run([STUDY, "--out=" + out], capture_output=True, text=True,
                            timeout=600)
    self.assertEqual(result.returncode, 0, result.stdout[-3000:] + result.stderr[-3000:])
    for name in ARTIFACTS:
      self.assertTrue(os.path.isfile(os.path.join(out, name)), name)
    self.assertTrue(os.listdir(os.path.join(out, "checkpoints")))
    for name in ARTIFACTS:
      if name.endswith(".json"):
        with open(os.path.join(out, name)) as f:
          json.load(f)
    with open(os.path.join(out, "parity.json")) as f:
      self.assertTrue(json.load(f)["pass"])
    with open(os.path.join(out, "recovery.json")) as f:
      self.assertTrue(json.load(f)["pass"])
    self.assertIn("trade report:", result.stdout)


if __name__ == "__main__":
  unittest.main()
