#!/usr/bin/python3
"""Every update verified, through the REAL train binary and real worker
processes (docs/parity.md, "Every update verified"): DDP's averaging on an
even split fails at the epoch's tail update wherever that tail splits
unevenly, in fp32 and bf16; every recipe and layer at once verifies every
update; a flipped bit in one rank's reduced gradient stops the run at its
update with no generation after it; a resumed run carries the count on;
run.fault's bit is refused outside its range."""
import glob
import json
import os
import unittest

import integration_support as support

config = support.write_config
train = support.train

# DDP's averaging (plain DDP): each rank's mean, divided by the world size.
DDP = dict(weighting="rank_mean", reducer="rank_average", batch=8, world=2, views=1,
           val=0.25, epochs=2)


def parity(out):
  return support.load(os.path.join(out, "parity.json"))


def training_views(out):
  return support.load(os.path.join(out, "sampler_audit.json"))["num_training_views"]


def manifests(out):
  """The `update` of every advertised generation's MANIFEST."""
  return sorted(int(json.load(open(m))["update"])
                for m in glob.glob(os.path.join(out, "checkpoints", "gen-*", "MANIFEST")))


class TailOnlyRuleTest(unittest.TestCase):
  """rank_mean + rank_average on 4 + 4: every full update is the right
  rule's; only an epoch's partial last update that splits unevenly (3 = 2 +
  1: 1/4 and 1/2 instead of 1/3 each) weighs its examples wrongly."""

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("tail_rule")
    cls.runs = []
    for precision in ("fp32", "bf16"):
      for ids in (40, 41, 42, 43):
        text = support.small_config(ids=ids, extra='precision: "%s"' % precision, **DDP)
        name = "%s_%d" % (precision, ids)
        out = os.path.join(cls.tmp, name)
        cls.runs.append((precision, ids, out, train(config(cls.tmp, name, text), out)))

  def test_an_uneven_tail_fails_at_the_first_tail_update_in_every_precision(self):
    tails = {"odd": 0, "even": 0}
    for precision, ids, out, result in self.runs:
      views = training_views(out)
      tail = views % 8
      where = "%s, %d identities, %d training receipts" % (precision, ids, views)
      if tail % 2 == 1:
        tails["odd"] += 1
        self.assertEqual(result.returncode, 3, where + ": " + result.stderr[-2000:])
        failure = parity(out)["every_update"]["first_failure"]
        self.assertEqual(failure["update"], views // 8, where)  # epoch 0's tail
        self.assertEqual(failure["check"], "accounting", where)
        self.assertIn("after the reducer's division by 2", failure["what"])
        self.assertIn("where one worker's weighs %r" % (1.0 / tail), failure["what"])
        self.assertIn("every update: %d of %d verified, update %d failed the accounting "
                      "check" % (views // 8, views // 8 + 1, views // 8), result.stderr)
        self.assertEqual(support.load(os.path.join(out, "finished.json"))["stopped_by"],
                         "parity_failed")
      else:
        # Every update's weights are the right rule's: the checks pass
        # every update and the run trains to its end (the drift budget of
        # the whole run, not these checks, judges bf16's other rounding).
        tails["even"] += 1
        self.assertIn(result.returncode, (0, 3), where + ": " + result.stderr[-2000:])
        every = parity(out)["every_update"]
        self.assertTrue(every["pass"], where)
        self.assertEqual(every["verified"], every["updates"])
        self.assertEqual(every["updates"], -(-views // 8) * 2, where)
        self.assertEqual(support.load(os.path.join(out, "finished.json"))["stopped_by"],
                         "epochs")
    # The sizes chosen hold both kinds of tail, in both precisions.
    self.assertGreater(tails["odd"], 1)
    self.assertGreater(tails["even"], 1)


class EveryRecipeTest(unittest.TestCase):

  def test_every_recipe_and_layer_at_once_verifies_every_update(self):
    tmp = support.temp_dir("all_recipes")
    text = support.small_config(
        ids=40, world=2, batch=8, epochs=2,
        model='architecture: "cnn" conv_channels: [4] hidden_units: [8] dropout: 0.2 '
              'batch_norm: "sync"',
        extra='precision: "bf16" accumulation_steps: 2 local_batch_sizes: [6, 2] '
              'clip_grad_norm { max_norm: 0.05 } '
              'lr_schedule { name: "linear_warmup_cosine" options { '
              '[type.googleapis.com/receipt_parity.LinearWarmupCosineOptions] { '
              'warmup_updates: 2 total_updates: 14 } } }')
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "all", text), out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    every = parity(out)["every_update"]
    self.assertEqual(every["checks"], ["accounting", "reduction", "clipping", "replicas"])
    self.assertGreaterEqual(every["updates"], 8)
    self.assertEqual(every["verified"], every["updates"])
    self.assertTrue(every["pass"])
    self.assertLess(every["largest_reduction_share"], 1)
    self.assertGreater(every["largest_clipping_share"], 0)  # it clipped, and was judged
    self.assertIn("every update (%d of %d) verified (accounting, reduction, clipping, "
                  "replicas)" % (every["updates"], every["updates"]), result.stdout)
    # Each checked update replayed in one process, bit for bit: two ranks'
    # uneven micro-batches, bf16, keyed dropout, the synchronized batch
    # norm's statistics, the clipping, the schedule's rate and the step.
    replay = parity(out)["replay"]
    self.assertTrue(replay["pass"])
    self.assertEqual(replay["replayed_updates"], len(parity(out)["whole_run"]["check_updates"]))
    self.assertEqual(replay["bitwise_updates"], replay["replayed_updates"])
    self.assertIn("recomputed in one process bit for bit", result.stdout)


class FlippedBitTest(unittest.TestCase):
  """run.fault flips one bit of the largest element of rank 1's reduced
  gradient at update 3: the run stops there, exit 3, and no generation
  holding update 3's state (MANIFEST update 4 or later) is advertised."""

  def test_a_flipped_sign_exponent_or_mantissa_bit_stops_the_run_at_its_update(self):
    tmp = support.temp_dir("flipped")
    for bit, what in ((31, "sign"), (27, "exponent"), (22, "high mantissa")):
      text = support.small_config(
          ids=60, world=2, batch=8, epochs=2,
          run_extra="fault { corrupt_rank: 1 corrupt_update: 3 corrupt_bit: %d }" % bit,
          extra="checkpoint { every_updates: 2 keep_last: 5 }")
      out = os.path.join(tmp, "bit%d" % bit)
      result = train(config(tmp, "bit%d" % bit, text), out)
      self.assertEqual(result.returncode, 3, what + ": " + result.stderr[-3000:])
      self.assertIn("run.fault flips bit %d of element" % bit, result.stderr)
      every = parity(out)["every_update"]
      failure = every["first_failure"]
      self.assertEqual((failure["update"], failure["rank"], failure["check"]),
                       (3, 1, "reduction"), what)
      self.assertEqual((every["updates"], every["verified"]), (4, 3), what)
      self.assertEqual(manifests(out), [2], what)  # the generation after update 2 only
      self.assertEqual(support.load(os.path.join(out, "finished.json"))["stopped_by"],
                       "parity_failed")


class ResumedRunTest(unittest.TestCase):

  def test_a_resumed_run_counts_every_update_of_every_attempt(self):
    tmp = support.temp_dir("resumed_checks")
    text = support.small_config(ids=60, world=2, batch=8, epochs=2,
                                extra="checkpoint { every_updates: 3 }")
    whole, part, results = support.stopped_and_resumed(tmp, text, 5, 10)
    for r in results:
      self.assertEqual(r.returncode, 0, r.stderr[-3000:])
    for out in (whole, part):
      every = parity(out)["every_update"]
      self.assertEqual((every["updates"], every["verified"]), (10, 10), out)
      self.assertTrue(every["pass"])
    self.assertEqual(support.final_hash(whole), support.final_hash(part))


class OffAndRefusedTest(unittest.TestCase):

  def test_checks_turned_off_are_said_so_and_do_not_fail(self):
    tmp = support.temp_dir("checks_off")
    text = support.small_config(ids=40, world=2, batch=8, extra="parity { every_update: false }")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "off", text), out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    every = parity(out)["every_update"]
    self.assertEqual(every["updates"], 0)
    self.assertEqual(every["not_verified"], "parity { every_update: false }")
    self.assertIn("every-update checks not run (parity { every_update: false })", result.stdout)

  def test_a_flipped_bit_out_of_range_or_beyond_the_run_is_refused(self):
    tmp = support.temp_dir("fault_refused")
    for fault, said in (
        ("corrupt_rank: 1 corrupt_update: 0 corrupt_bit: 32",
         r"run.fault.corrupt_bit: must be a bit of a float32, 0 to 31; got 32"),
        ("corrupt_rank: 2 corrupt_update: 0 corrupt_bit: 3",
         r"run.fault.corrupt_rank: rank 2 does not exist with world_size 2"),
        ("corrupt_rank: 1 corrupt_bit: 3", r"run.fault: corrupt_update is not set: a flipped "
                                           r"bit needs corrupt_rank, corrupt_update and "
                                           r"corrupt_bit"),
        ("corrupt_rank: 1 corrupt_update: 500 corrupt_bit: 3",
         r"run.fault.corrupt_update: update 500 is beyond the run")):
      path = config(tmp, "refused", support.small_config(ids=40, world=2, batch=8,
                                                          run_extra="fault { %s }" % fault))
      out = os.path.join(tmp, "out")
      result = train(path, out)
      self.assertEqual(result.returncode, 2, fault + ": " + result.stderr[-2000:])
      self.assertRegex(result.stderr, r"refused\.pbtxt:\d+:\d+: " + said)
      self.assertFalse(os.path.exists(os.path.join(out, "checkpoints")))


class MicroBatchMeanTest(unittest.TestCase):
  """A team's bf16 AdamW recipe (accumulation 2, warmup-cosine, clipping,
  keyed dropout, synchronized batch norm) with micro_batch_mean, which
  weighs a fuller micro-batch's examples less: the accounting check fails
  it at the epoch's tail, where the micro-batches hold different numbers of
  examples, in bf16; and the drift twin trains global_count, never the
  run's weighting."""

  MODEL = ('architecture: "cnn" conv_channels: [4] hidden_units: [8] dropout: 0.1 '
           'batch_norm: "sync"')
  RECIPE = """precision: "bf16"
accumulation_steps: 2
clip_grad_norm { max_norm: 1.0 }
lr_schedule { name: "linear_warmup_cosine" options {
  [type.googleapis.com/receipt_parity.LinearWarmupCosineOptions] {
    warmup_updates: 2 total_updates: 12 min_factor: 0.1 } } }
"""

  def recipe(self, extra=""):
    text = support.small_config(ids=42, world=2, batch=8, epochs=2, weighting="micro_batch_mean",
                                model=self.MODEL, extra=self.RECIPE + extra)
    return text.replace("optimizer { sgd { learning_rate: 0.05 momentum: 0.9 } }",
                        "optimizer { adamw { learning_rate: 0.01 } }")

  def test_micro_batch_mean_fails_with_accumulation_2_in_bf16_with_adamw(self):
    tmp = support.temp_dir("micro_batch_mean")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "mbm", self.recipe()), out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    failure = parity(out)["every_update"]["first_failure"]
    self.assertEqual(failure["check"], "accounting")
    self.assertIn("weighs 0.125 where one worker's weighs", failure["what"])

  def test_the_drift_twin_trains_the_effective_batch_rule(self):
    tmp = support.temp_dir("micro_batch_mean_twin")
    out = os.path.join(tmp, "out")
    text = self.recipe("parity { every_update: false stop_on_failure: false }")
    result = train(config(tmp, "mbm", text), out)
    self.assertIn(result.returncode, (0, 3), result.stderr[-3000:])
    twin = support.load(os.path.join(out, "drift_reference", "run_manifest.json"))
    self.assertEqual(twin["plugins"]["loss_weighting"], "global_count")
    self.assertEqual(twin["plugins"]["reducer"], "allreduce_sum")
    reference = support.load(os.path.join(out, "reference", "run_manifest.json"))
    self.assertEqual(reference["plugins"]["loss_weighting"], "micro_batch_mean")


if __name__ == "__main__":
  unittest.main()
