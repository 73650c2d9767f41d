"""Shared by the cost benchmarks of issue 29 (audit_scaling.py,
dedup_scaling.py, checkpoint_cost.py, receipt_memory.py, work_cost.py):
the machine's load, the output folder, a target checked and printed, the
JSON report written. No timing is decided here."""
import json
import os
import tempfile


def load_average():
  """/proc/loadavg's line: what else the cores were doing."""
  with open("/proc/loadavg") as f:
    return f.read().strip()


def out_folder(out, prefix):
  """`out` (made; a relative one under `bazel run` is the folder it was
  started from), or a fresh temporary folder named `prefix`."""
  if out and not os.path.isabs(out):
    out = os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), out)
  folder = out or tempfile.mkdtemp(prefix=prefix + ".")
  os.makedirs(folder, exist_ok=True)
  return folder


def target(name, measured, comparison, threshold):
  """One target as every cost benchmark's JSON keeps it."""
  met = {"<": measured < threshold, "<=": measured <= threshold,
         ">=": measured >= threshold, ">": measured > threshold}[comparison]
  return {"target": name, "measured": measured, "comparison": comparison,
          "threshold": threshold, "met": met}


def target_line(t):
  """'MET    NAME: MEASURED <= THRESHOLD' (or MISSED)."""
  return (f"{'MET' if t['met'] else 'MISSED':<6} {t['target']}: "
          f"{t['measured']:.3f} {t['comparison']} {t['threshold']}")


def print_targets(targets):
  for t in targets:
    print("  " + target_line(t))


def write_report(folder, name, payload):
  """FOLDER/NAME holding `payload` as indented JSON; prints and returns
  its path."""
  path = os.path.join(folder, name)
  with open(path, "w") as f:
    json.dump(payload, f, indent=2)
  print(f"wrote {path}")
  return path
