#!/usr/bin/env python3
"""Bad input to the conformance binary: exit 2, the flag or plugin named."""
import subprocess
import sys

CONFORMANCE = sys.argv[1]
failures = []


def expect(args, code, text):
  run = subprocess.run([CONFORMANCE] + args, capture_output=True, text=True, timeout=120)
  said = run.stdout + run.stderr
  if run.returncode != code or text not in said:
    failures.append("%s: exit %d (wanted %d), wanted %r in:\n%s" %
                    (" ".join(args), run.returncode, code, text, said[-2000:]))


expect(["--kind=tokenizer", "--plugin=x"], 2, "--kind: 'tokenizer' is not one of")
expect(["--kind=reducer", "--plugin=no_such_reducer"], 2,
       "no reducer plugin named 'no_such_reducer'; registered:")
expect(["--kind=reducer"], 2, "--plugin: name the plugin to check")
expect(["--kind=reducer", "--plugin=allreduce_sum", "--options={ not text"], 2, "--options:")
expect(["--kind=model", "--plugin=mlp", "--input_shape=1,x,16"], 2, "--input_shape: '1,x,16'")
expect(["--kind=model", "--plugin=mlp", "--torchscript=m.pt"], 2,
       "--torchscript goes with --kind=model and no --plugin")
expect(["--kind=model", "--torchscript=/no/such/model.pt"], 2, "/no/such/model.pt")
expect(["--kind=reducer", "--plugin=allreduce_sum", "--plugin_library=/no/such.so"], 2,
       "/no/such.so")
expect(["--kind=loss_weighting", "--plugin=class_balanced",
        "--options=[type.googleapis.com/receipt_parity.ClassBalancedOptions] { power: -1 }"], 2,
       "power")
# A passing suite and a failing one: exit 0 and 3.
expect(["--kind=metric_dedup", "--plugin=by_receipt_id"], 0, "0 failed")
expect(["--kind=metric_dedup", "--plugin=none"], 3, "FAIL each receipt counted exactly once")
expect(["--kind=metric_dedup", "--plugin=by_receipt_id", "--expect_failure=counted"], 3,
       "expected a failing check holding 'counted'; every check passed")

for f in failures:
  print("FAIL", f)
print("%d checks, %d failed" % (12, len(failures)))
sys.exit(1 if failures else 0)
