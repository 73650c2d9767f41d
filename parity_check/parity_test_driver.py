#!/usr/bin/python3
"""The check behind parity_test (parity_check/parity_test.bzl).

For each world size W: `train --config=CONFIG --set world_size=W` into a
folder of its own (real processes over a real process group; the run
trains its one-worker reference and is judged update by update and over
the whole run), then the run's own artifacts are read:
  parity.json          pass, or its reasons and every parameter outside
                       its tolerance;
  validation.json      every receipt counted once
                       (predictions_counted == unique_ids_counted);
  sampler_audit.json   no id trained twice in an epoch, unless the policy
                       pads with repeats (--sampler_duplicates=padding).
Then `parity --config=CONFIG --split=SPLIT`, the one-process simulated
check. Every finding is printed; the exit is 0 when there is none (with
--expect_failure=TEXT: 0 only when a finding holds TEXT), 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--train", required=True)
  parser.add_argument("--parity", required=True)
  parser.add_argument("--config", required=True)
  parser.add_argument("--world_sizes", default="2,3")
  parser.add_argument("--split", default="3,1")
  parser.add_argument("--plugin", action="append", default=[])
  parser.add_argument("--set", action="append", default=[], dest="sets")
  parser.add_argument("--sampler_duplicates", choices=("none", "padding"), default="none")
  parser.add_argument("--expect_failure", default="")
  return parser.parse_args(argv)


def load(path):
  with open(path) as f:
    return json.load(f)


def report_lines(parity, where):
  """The parity report's own lines: its reasons, then every parameter
  outside its tolerance (name, differences, tolerance)."""
  lines = ["%s: %s" % (where, reason) for reason in parity.get("failures", [])]
  atol, rtol = parity.get("atol", 0), parity.get("rtol", 0)
  for tensor in parity.get("gradients", []):
    if tensor.get("pass", True) or not tensor.get("judged", True):
      continue
    lines.append(
        "%s: parameter %s: max |diff| %.6g, max relative diff %.6g, tolerance atol %.3g + "
        "rtol %.3g * |reference| (max |reference| %.6g)" % (
            where, tensor["name"], tensor.get("max_abs_diff", 0), tensor.get("max_rel_diff", 0),
            tensor.get("atol", atol), tensor.get("rtol", rtol),
            tensor.get("max_abs_reference", 0)))
  for update in parity.get("whole_run", {}).get("updates", []):
    for reason in update.get("failures", []):
      lines.append("%s: whole run, update %s: %s" % (where, update.get("update", 0), reason))
  return lines


def verdict_line(result):
  """train's one-line verdict ("parity PASSED: ..." or "parity FAILED: ..."):
  how many tensors and updates each verdict judged and which were left to
  the replay."""
  for line in (result.stdout + result.stderr).splitlines():
    at = line.find("parity PASSED: ")
    if at < 0:
      at = line.find("parity FAILED: ")
    if at >= 0:
      return line[at:]
  return "train printed no parity verdict"


def run_findings(args, world_size, sets, tmp):
  out = os.path.join(tmp, "world_size_%d" % world_size)
  where = "%d workers (%s)" % (world_size, out)
  command = [args.train, "--config=" + args.config, "--out=" + out,
             "--set", "world_size=%d" % world_size, *sets]
  result = subprocess.run(command, capture_output=True, text=True)
  print("%d workers: %s" % (world_size, verdict_line(result)))
  findings = []
  if result.returncode not in (0, 3):
    return ["%s: train exited %d: %s" % (where, result.returncode, result.stderr[-3000:])]
  parity_path = os.path.join(out, "parity.json")
  if os.path.exists(parity_path):
    parity = load(parity_path)
    if not parity.get("pass", False):
      findings += report_lines(parity, where) or [
          "%s: parity failed (see %s)" % (where, parity_path)]
  else:
    findings.append("%s: the run wrote no parity.json (exit %d): %s"
                    % (where, result.returncode, result.stderr[-2000:]))
  validation_path = os.path.join(out, "validation.json")
  if os.path.exists(validation_path):
    validation = load(validation_path)
    counted = validation.get("predictions_counted", 0)
    unique = validation.get("unique_ids_counted", 0)
    if counted != unique:
      findings.append("%s: validation counted %d predictions for %d receipts (dedup %s): a "
                      "receipt counted twice" % (where, counted, unique,
                                                 validation.get("dedup", "?")))
  elif result.returncode == 0:
    findings.append("%s: the run wrote no validation.json" % where)
  audit_path = os.path.join(out, "sampler_audit.json")
  if args.sampler_duplicates == "none" and os.path.exists(audit_path):
    for epoch in load(audit_path).get("epochs", []):
      duplicated = epoch.get("duplicated_ids", [])
      if duplicated:
        ids = ", ".join("%s (%d times)" % (d.get("receipt_id", "?"), d.get("count", 0))
                        for d in duplicated[:5])
        findings.append("%s: the sampler audit finds %d ids trained twice in epoch %d "
                        "(%s%s), which the policy promises not to" % (
                            where, len(duplicated), epoch.get("epoch", 0), ids,
                            ", ..." if len(duplicated) > 5 else ""))
  return findings


def simulated_findings(args, sets, tmp):
  out = os.path.join(tmp, "simulated")
  where = "simulated split %s (%s)" % (args.split, out)
  result = subprocess.run([args.parity, "--config=" + args.config, "--split=" + args.split,
                           "--out=" + out, *sets], capture_output=True, text=True)
  for line in result.stdout.splitlines():
    if line.startswith("SIMULATED") or line.startswith("split "):
      print(line)
  if result.returncode not in (0, 3):
    return ["%s: parity exited %d: %s" % (where, result.returncode, result.stderr[-3000:])]
  parity = load(os.path.join(out, "parity.json"))
  if parity.get("pass", False):
    return []
  return report_lines(parity, where) or ["%s: parity failed" % where]


def main(argv):
  args = parse_args(argv)
  tmp = tempfile.mkdtemp(prefix="parity_test_", dir=os.environ.get("TEST_TMPDIR"))
  args.train, args.parity, args.config = (os.path.abspath(p) for p in
                                          (args.train, args.parity, args.config))
  sets = []
  for value in args.sets:
    sets += ["--set", value]
  if args.plugin:
    libraries = ", ".join(json.dumps(os.path.abspath(p)) for p in args.plugin)
    sets += ["--set", "plugin_library=[%s]" % libraries]
  findings = []
  for world_size in (int(w) for w in args.world_sizes.split(",")):
    found = run_findings(args, world_size, sets, tmp)
    print("%d workers: %s" % (world_size, "FAIL" if found else "pass"))
    findings += found
  found = simulated_findings(args, sets, tmp)
  print("simulated split %s: %s" % (args.split, "FAIL" if found else "pass"))
  findings += found
  for line in findings:
    print("FAIL " + line)
  if args.expect_failure:
    if any(args.expect_failure in line for line in findings):
      print("expected failure: a finding holds '%s'" % args.expect_failure)
      return 0
    print("FAIL expected a finding holding '%s'; the check %s" %
          (args.expect_failure, "found other things" if findings else "passed"))
    return 1
  print("%s: %s" % (args.config, "parity holds" if not findings else
                    "%d finding(s)" % len(findings)))
  return 1 if findings else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
