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
    "world_size_change.svg",
]


# The verdict each planted mistake (study/planted_mistakes.h) is there to
# show: the one whose design catches it.
CAUGHT_BY = {
    "DDP averaging at the epoch's tail": "every update (accounting)",
    "per-rank clipping": "first update",
    "a Python module with torch.nn.functional.dropout": "replay",
    "a learning rate drifting 1 % an update from update 2": "replay",
    "a bias updated with the rank-local gradient": "every update (reduction)",
}


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
    # The bf16 run beside the fp32 one: its parity passes under the
    # tolerance derived from its own reference's update against fp64.
    with open(os.path.join(out, "two_worker_bf16", "parity.json")) as f:
      bf16_parity = json.load(f)
    self.assertTrue(bf16_parity["pass"], bf16_parity.get("failures"))
    derived = bf16_parity["derived"]
    self.assertGreater(derived["judged_tensors"], 0)
    self.assertEqual(derived["judged_tensors"] + len(derived.get("not_judged_tensors", [])),
                     len(derived["tensors"]))
    self.assertTrue(bf16_parity["replay"]["pass"])
    with open(os.path.join(out, "trade_report.json")) as f:
      bf16 = json.load(f)["two_workers_bf16"]
    self.assertEqual(bf16["status"], "measured")
    self.assertEqual(bf16["parity_verdict"], "pass")
    self.assertGreater(bf16["over_fp32_examples_per_second"], 0)
    self.assertGreater(bf16["derived"]["judged_tensors"], 0)
    with open(os.path.join(out, "trade_report.md")) as f:
      markdown = f.read()
    self.assertIn("## fp32 against bf16\n\n|  | two workers, fp32 |", markdown)
    # The two-worker run is judged over its whole run, and passes.
    with open(os.path.join(out, "parity.json")) as f:
      whole = json.load(f)["whole_run"]
    self.assertEqual(whole["mode"], "drift_budget")
    self.assertTrue(whole["pass"])
    # Update 0 is judged tensor by tensor; every update's tensors are either
    # judged or listed as diverged.
    self.assertTrue(whole["updates"][0]["judged"])
    for u in whole["updates"]:
      self.assertEqual(u.get("judged_tensors", 0) + len(u.get("diverged_tensors", [])),
                       len(u["tensors"]))
    # Every recipe at once passes, at its first update and over its run.
    with open(os.path.join(out, "two_worker_all_recipes", "parity.json")) as f:
      all_parity = json.load(f)
    self.assertTrue(all_parity["pass"], all_parity.get("failures"))
    self.assertTrue(all_parity["whole_run"]["pass"], all_parity["whole_run"])
    # ... and every update of it passes every check (issue 46).
    every = all_parity["every_update"]
    self.assertEqual(every["checks"], ["accounting", "reduction", "clipping", "replicas"])
    self.assertEqual(every["verified"], every["updates"])
    with open(os.path.join(out, "two_worker_all_recipes", "run_summary.json")) as f:
      self.assertEqual(every["updates"], json.load(f)["total_updates"])
    with open(os.path.join(out, "trade_report.json")) as f:
      all_recipes = json.load(f)["two_workers_all_recipes"]
    self.assertEqual(all_recipes["status"], "measured")
    self.assertEqual(all_recipes["parity_verdict"], "pass")
    self.assertTrue(all_recipes["parity"]["every_update"].startswith("every update ("),
                    all_recipes["parity"]["every_update"])
    for recipe in ("accumulation_steps 2", "lr_schedule linear_warmup_cosine", "precision bf16",
                   "batch_norm sync", "local_batch_sizes 20+12"):
      self.assertIn(recipe, all_recipes["recipes"])
    self.assertIn("## Every recipe at once", markdown)
    # The run preempted on two workers and continued on three and on one
    # trains the same receipts in every update and ends with the
    # uninterrupted run's bits; its duplicate_pad twin trains others.
    with open(os.path.join(out, "trade_report.json")) as f:
      world = json.load(f)["world_size_change"]
    self.assertEqual(world["status"], "measured")
    self.assertEqual([c["new_world_size"] for c in world["continuations"]], [3, 1])
    for continued in world["continuations"]:
      self.assertEqual(continued.get("changed_updates", 0), 0, continued)
      self.assertTrue(continued["final_parameters_equal"], continued)
      self.assertEqual(continued["world_size_change_rule"], "world_size_independent")
      self.assertEqual(continued.get("loss_max_abs_diff", 0), 0)
    self.assertGreater(world["duplicate_pad"]["changed_updates"], 0, world["duplicate_pad"])
    self.assertIn("## The world size changed mid-run", markdown)
    # What these verdicts catch: every planted mistake, in fp32, bf16 and
    # with synchronized batch norm, fails parity, and the verdict built to
    # catch it is among those that did.
    with open(os.path.join(out, "trade_report.json")) as f:
      planted = json.load(f)["planted_mistakes"]
    self.assertEqual(planted["status"], "measured")
    self.assertEqual(len(planted["runs"]), 15)
    self.assertEqual(planted["caught_runs"], 15)
    for run in planted["runs"]:
      self.assertTrue(run["caught"], run)
      self.assertIn(CAUGHT_BY[run["mistake"]], run["caught_by"], run)
    self.assertEqual(sorted({r["setting"] for r in planted["runs"]}),
                     ["bf16", "fp32", "synchronized batch norm"])
    self.assertIn("## What these verdicts catch", markdown)
    self.assertNotIn("**MISSED**", markdown)


if __name__ == "__main__":
  unittest.main()
