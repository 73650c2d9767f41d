#!/usr/bin/env python3
"""Writes gpu_check.json from the runs tools/gpu_check.sh made (stdlib only:
it runs on the GPU machine's python3 and on the project's).

Usage: summarize.py OUT DEVICE LIBTORCH_DIR
OUT holds steps.tsv (name, exit code, seconds, kind per line) and one folder
per step. Exits 0 when every step passed, 1 otherwise, 2 on bad input.
"""
import json
import os
import sys


def load(path):
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError) as e:
    return {"error": "%s: %s" % (path, e)}


def first_step_difference(a_path, b_path):
  """Largest |a - b| and |a - b| / |b| over the first update's gradients and
  parameters after the step; None when either file is unreadable."""
  a, b = load(a_path), load(b_path)
  if "error" in a or "error" in b:
    return None
  worst_abs, worst_rel, bitwise = 0.0, 0.0, True
  for key in ("gradients", "parameters_after"):
    for name, tensor in b.get(key, {}).items():
      mine = a.get(key, {}).get(name)
      if mine is None or mine.get("shape") != tensor.get("shape"):
        return {"error": "%s %s: missing or of another shape" % (key, name)}
      for x, ref in zip(mine["values"], tensor["values"]):
        diff = abs(x - ref)
        bitwise = bitwise and x == ref
        worst_abs = max(worst_abs, diff)
        if ref != 0:
          worst_rel = max(worst_rel, diff / abs(ref))
  return {"max_abs_diff": worst_abs, "max_rel_diff": worst_rel,
          "bitwise_equal": bitwise}


def step_record(out, name, code, seconds, kind):
  record = {"name": name, "exit_code": code, "seconds": seconds, "kind": kind}
  folder = os.path.join(out, name)
  if kind == "refusal":
    # A load-time refusal: exit 2, the reason in its stderr.
    try:
      with open(os.path.join(folder, "stderr.txt")) as f:
        record["message"] = "\n".join(f.read().strip().splitlines()[-1:])
    except OSError:
      record["message"] = ""
    record["pass"] = code == 2 and "needs a GPU" in record["message"]
    return record
  record["pass"] = code == 0
  if kind == "parity":
    parity = load(os.path.join(folder, "parity.json"))
    for field in ("pass", "max_abs_diff", "max_rel_diff", "bitwise_equal",
                  "ranks_agree", "world_size", "note", "error"):
      if field in parity:
        record["parity_" + field if field != "error" else "error"] = parity[field]
    record["pass"] = record["pass"] and parity.get("pass") is True
  manifest = load(os.path.join(folder, "reference" if kind == "reference" else "",
                               "run_manifest.json"))
  if "platform" in manifest:
    record["platform"] = manifest["platform"]
  return record


def main():
  if len(sys.argv) != 4:
    print(__doc__, file=sys.stderr)
    return 2
  out, device, libtorch_dir = sys.argv[1:]
  steps = []
  with open(os.path.join(out, "steps.tsv")) as f:
    for line in f:
      name, code, seconds, kind = line.rstrip("\n").split("\t")
      steps.append(step_record(out, name, int(code), float(seconds), kind))
  summary = {"device": device, "libtorch_dir": libtorch_dir, "steps": steps}
  # The same config trained twice on the same device: the reference made
  # alone and the one the two-rank run made for itself.
  repeat = first_step_difference(
      os.path.join(out, "reference", "reference", "first_step.json"),
      os.path.join(out, "gloo_two_ranks", "reference", "first_step.json"))
  summary["reference_repeatable"] = repeat
  if device == "cuda":
    # What a GPU reference differs from a CPU reference by: the figures the
    # cross-device tolerance is derived from.
    summary["gpu_vs_cpu"] = first_step_difference(
        os.path.join(out, "reference", "reference", "first_step.json"),
        os.path.join(out, "cpu_reference", "reference", "first_step.json"))
  summary["pass"] = (all(s["pass"] for s in steps) and repeat is not None
                     and repeat.get("bitwise_equal") is True)
  text = json.dumps(summary, indent=1, sort_keys=True)
  with open(os.path.join(out, "gpu_check.json"), "w") as f:
    f.write(text + "\n")
  print(text)
  return 0 if summary["pass"] else 1


if __name__ == "__main__":
  sys.exit(main())
