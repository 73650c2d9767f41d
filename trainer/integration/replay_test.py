#!/usr/bin/python3
"""The checked updates replayed in one process (docs/parity.md, "Replayed
bit for bit"), through the REAL train binary and real worker processes: the
ordered mode replays bit for bit; three workers are judged within the bound
of their sum's order; a team's module that drops with torch's generator
instead of keys fails the replay in fp32 and bf16, and a correct module
with a biased convolution passes in both; a resumed run replays
its earlier attempt's updates, and a damaged kept state fails naming its
file; a schedule that keeps state between calls fails the replay;
parity { replay: false } keeps nothing and says so.

Arguments: //trainer:train, then //plugins/planted:libplanted_mistakes.so
(the planted schedule test_drifting_rate). The planted mistakes in fp32,
bf16 and with synchronized batch norm are the study's (study/study_test)."""
import glob
import os
import sys
import unittest

import integration_support as support

PLANTED_MISTAKES = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None

config = support.write_config
train = support.train

FUNCTIONAL_DROPOUT = '''
import torch
from torch import nn
from torch.nn import functional as F


class FunctionalDropoutNet(nn.Module):
  """Drops with torch's generator: no module for the layer audit to see."""

  def __init__(self, image_size: int = 16):
    super().__init__()
    self.conv = nn.Conv2d(1, 4, 3, padding=1)
    self.head = nn.Linear(4 * (image_size // 2) ** 2, 4)

  def forward(self, images):
    x = F.max_pool2d(torch.tanh(self.conv(images)), 2)
    return self.head(F.dropout(torch.flatten(x, 1), 0.5, self.training))
'''

BIASED_CONV = '''
import torch
from torch import nn
from torch.nn import functional as F


class BiasedConvNet(nn.Module):
  """A correct plain module: a 3x3 convolution with bias (its gradient a sum
  over every pixel of every example), average pooling, tanh, two linear
  layers."""

  def __init__(self, image_size: int = 16):
    super().__init__()
    self.conv = nn.Conv2d(1, 4, 3, padding=1)
    self.hidden = nn.Linear(4 * (image_size // 2) ** 2, 16)
    self.head = nn.Linear(16, 4)

  def forward(self, images):
    x = torch.tanh(F.avg_pool2d(self.conv(images), 2))
    return self.head(torch.tanh(self.hidden(torch.flatten(x, 1))))
'''

BIASED_CONV_MODEL = ('name: "python_module" options { '
                     '[type.googleapis.com/receipt_parity.PythonModuleOptions] { '
                     'path: "biased_conv.py" factory: "BiasedConvNet" } }')

PYTHON_MODEL = ('name: "python_module" options { '
                '[type.googleapis.com/receipt_parity.PythonModuleOptions] { '
                'path: "functional_dropout.py" factory: "FunctionalDropoutNet" } }')


def parity(out):
  return support.load(os.path.join(out, "parity.json"))


def replayed(out):
  return parity(out)["replay"]


class ReplayModesTest(unittest.TestCase):

  def assert_replayed(self, out, result, mode):
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    replay = replayed(out)
    checked = parity(out)["whole_run"]["check_updates"]
    self.assertEqual([u["update"] for u in replay["updates"]], checked)
    self.assertEqual(replay["replayed_updates"], len(checked))
    self.assertTrue(replay["pass"])
    for u in replay["updates"]:
      self.assertEqual(u["mode"], mode, u)
      self.assertTrue(u["pass"], u)
      self.assertTrue(u["parameters_bitwise"], u)
    self.assertEqual(sorted(glob.glob(os.path.join(out, "trajectory", "replay-*.json"))),
                     sorted(os.path.join(out, "trajectory", "replay-%d.json" % k)
                            for k in checked))
    return replay

  def test_the_ordered_mode_replays_bit_for_bit(self):
    tmp = support.temp_dir("replay_ordered")
    text = support.small_config(
        world=2, batch=8, epochs=2, reducer="ordered_sum", sampler="global_batches",
        reducer_options='options { [type.googleapis.com/receipt_parity.OrderedSumOptions] '
                        '{ chunk_slots: 2 } }')
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "ordered", text), out)
    replay = self.assert_replayed(out, result, "bitwise")
    self.assertEqual(replay["bitwise_updates"], replay["replayed_updates"])
    self.assertIn("replay: %d of %d checked updates" % (replay["replayed_updates"],
                                                        replay["replayed_updates"]),
                  result.stdout)
    self.assertIn("recomputed in one process bit for bit", result.stdout)

  def test_three_workers_are_judged_within_the_bound_of_their_sums_order(self):
    tmp = support.temp_dir("replay_three")
    text = support.small_config(world=3, batch=6, epochs=1)
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "three", text), out)
    replay = self.assert_replayed(out, result, "bound")
    for u in replay["updates"]:
      self.assertEqual(u["ranks"], 3)
      self.assertEqual(u["stepped_from"], "run")
      self.assertLessEqual(u["largest_share_of_bound"], 1)

  def test_replay_false_keeps_nothing_and_says_so(self):
    tmp = support.temp_dir("replay_off")
    text = support.small_config(world=2, batch=8, extra="parity { replay: false }")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "off", text), out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertEqual(glob.glob(os.path.join(out, "trajectory", "replay-*")), [])
    self.assertEqual(replayed(out)["not_replayed"], "parity { replay: false }")
    self.assertIn("no update replayed (parity { replay: false })", result.stdout)


class UnkeyedRandomnessTest(unittest.TestCase):
  """torch.nn.functional.dropout in a team's module draws from torch's
  generator, which the replay seeds otherwise than the run: the replayed
  gradient differs, and the run fails (exit 3) naming it."""

  def test_functional_dropout_fails_the_replay_in_fp32_and_bf16(self):
    for precision in ("fp32", "bf16"):
      tmp = support.temp_dir("replay_dropout_" + precision)
      support.write(os.path.join(tmp, "functional_dropout.py"), FUNCTIONAL_DROPOUT)
      text = support.small_config(world=2, batch=8, model=PYTHON_MODEL,
                                  extra='precision: "%s"' % precision)
      out = os.path.join(tmp, "out")
      result = train(config(tmp, "dropout", text), out)
      self.assertEqual(result.returncode, 3, precision + ": " + result.stderr[-3000:])
      replay = replayed(out)
      self.assertGreaterEqual(replay["replayed_updates"], 1, precision)
      self.assertFalse(replay["pass"], precision)
      first = replay["updates"][0]
      self.assertFalse(first["pass"], precision)
      self.assertEqual(first["first_difference"]["what"], "gradient", precision)
      self.assertIn("replay of update 0: the gradient of ", first["failures"][0])
      self.assertTrue(any(f.startswith("replay: ") for f in parity(out)["failures"]),
                      precision)


class StatefulScheduleTest(unittest.TestCase):
  """A schedule that keeps a rate between calls (the test-only
  test_drifting_rate: 1 % more each update from update 2 on) drifts the run
  and its references alike, so numerics cannot see it; the replay asks a
  fresh schedule for update K's factor alone and fails the run (exit 3)."""

  def test_a_drifting_rate_fails_the_replay(self):
    tmp = support.temp_dir("replay_schedule")
    text = support.small_config(world=2, batch=8, epochs=2, extra="""plugin_library: "%s"
lr_schedule {
  name: "test_drifting_rate" options {
    [type.googleapis.com/receipt_parity.testing.DriftingRateScheduleOptions] {
      from_update: 2 scale: 1.01 } } }""" % PLANTED_MISTAKES)
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "rate", text), out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    report = parity(out)
    self.assertTrue(report["every_update"]["pass"])
    updates = {u["update"]: u for u in report["replay"]["updates"]}
    self.assertTrue(updates[0]["pass"])
    last = max(updates)
    self.assertFalse(updates[last]["pass"])
    self.assertIn("the config's schedule gives the factor 1.01", updates[last]["failures"][0])
    self.assertIn("a schedule must be a function of the update alone",
                  updates[last]["failures"][0])


class CorrectModuleTest(unittest.TestCase):
  """A team's correct module whose convolution bias sums 1,024 terms a rank
  passes on two workers in fp32 and bf16: its first update judged within a
  tolerance derived for it, not a fixed one, and replayed bit for bit."""

  def test_a_biased_convolution_passes_in_fp32_and_bf16(self):
    for precision in ("fp32", "bf16"):
      tmp = support.temp_dir("biased_conv_" + precision)
      support.write(os.path.join(tmp, "biased_conv.py"), BIASED_CONV)
      text = support.small_config(world=2, batch=8, epochs=2, model=BIASED_CONV_MODEL,
                                  extra='precision: "%s"' % precision)
      out = os.path.join(tmp, "out")
      result = train(config(tmp, "conv", text), out)
      self.assertEqual(result.returncode, 0, precision + ": " + result.stderr[-3000:])
      report = parity(out)
      self.assertTrue(report["pass"], (precision, report["failures"]))
      self.assertEqual(report["derived"]["derived_for"], precision)
      self.assertGreater(report["derived"]["judged_tensors"], 0, precision)
      self.assertEqual(replayed(out)["bitwise_updates"], replayed(out)["replayed_updates"])
      # Each verdict states its power per tensor: the replay sees a change
      # of one update far smaller than numerics can, in either precision.
      power = {p["verdict"]: p for p in report["power"]}
      self.assertEqual(set(power), {"first_update", "every_update", "replay", "whole_run"})
      replay_power = power["replay"]
      self.assertEqual(replay_power["judged_tensors"], len(replay_power["tensors"]))
      self.assertLess(replay_power["smallest_relative_change"], 1e-3)
      judged = [t for t in power["first_update"]["tensors"] if t.get("judged")]
      self.assertEqual(len(judged), report["derived"]["judged_tensors"])
      for t in judged:
        self.assertLessEqual(t["smallest_relative_change"], 0.1)


class ResumedReplayTest(unittest.TestCase):
  """An attempt keeps the states of the checked updates it trains; the
  attempt that finishes replays them all. A kept state damaged between
  attempts fails the replay, naming its file."""

  def run_in_two_attempts(self, name, damage=None):
    tmp = support.temp_dir("replay_resumed_" + name)

    def text(checked, run_extra=""):
      # parity.check_updates and run.max_updates are operational: both
      # attempts are one run.
      return support.small_config(
          world=2, batch=8, epochs=2, run_extra=run_extra,
          extra="checkpoint { every_updates: 2 keep_last: 2 } "
                "parity { check_updates: %s }" % checked)
    first = config(tmp, "first", text("[1]", "max_updates: 3"))
    whole = config(tmp, "whole", text("[1, 5]"))
    out = os.path.join(tmp, "out")
    self.assertEqual(train(first, out).returncode, 0)
    if damage:
      damage(out)
    return out, train(whole, out)

  def test_a_resumed_run_replays_its_earlier_attempts_updates(self):
    out, result = self.run_in_two_attempts("clean")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    replay = replayed(out)
    self.assertTrue(replay["pass"])
    modes = {u["update"]: u["mode"] for u in replay["updates"]}
    self.assertEqual(modes[0], "bitwise")
    self.assertEqual(modes[1], "bitwise")  # the first attempt's
    self.assertEqual(modes[5], "bitwise")

  def test_a_damaged_kept_state_fails_naming_its_file(self):
    def damage(out):
      path = os.path.join(out, "trajectory", "replay-1.pt")
      with open(path, "r+b") as f:
        f.seek(64)
        byte = f.read(1)
        f.seek(64)
        f.write(bytes([byte[0] ^ 0xFF]))
    out, result = self.run_in_two_attempts("damaged", damage)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    replay = replayed(out)
    bad = [u for u in replay["updates"] if u["update"] == 1][0]
    self.assertEqual(bad["mode"], "unreadable")
    self.assertIn("replay-1.pt", bad["failures"][0])
    self.assertFalse(replay["pass"])


if __name__ == "__main__":
  unittest.main()
