#!/usr/bin/python3
"""Layers that keep parity (issue 25), through the REAL train binary and
real worker processes: a model with keyed dropout passes parity with two
worker processes on a 3+1 split and on a masked tail (the one-process 3+1
check is //parity_check:parity_cli_test's), its dropout does act (the
gradient is not the model's without it), a run stopped and resumed ends
bitwise where the uninterrupted run does, and the layer audit lists the
dropout as parity-safe. A probability outside [0, 1) is refused naming the
field. Synchronized batch norm passes parity over the whole run on a 3+1
split and with micro-batches on a masked tail, keeps its running
statistics equal on every rank and resumes bitwise; torch's per-rank batch
norm fails at the first update, which stops the run."""
import os
import unittest

import integration_support as support

KEYED = 'architecture: "cnn" conv_channels: [4] hidden_units: [16, 8] dropout: 0.5'
PLAIN = 'architecture: "cnn" conv_channels: [4] hidden_units: [16, 8]'


config = support.write_config
train = support.train


def summary(out):
  return support.load(os.path.join(out, "run_summary.json"))


class KeyedDropoutTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("keyed_dropout")
    # Two views per receipt: a mask is keyed by the receipt id and the view.
    cls.uneven = config(cls.tmp, "uneven", support.small_config(
        world=2, batch=4, ids=24, views=2, epochs=2, model=KEYED,
        extra="local_batch_sizes: [3, 1]"))
    cls.uneven_out = os.path.join(cls.tmp, "uneven")
    cls.uneven_run = train(cls.uneven, cls.uneven_out)

  def test_two_workers_on_a_3_1_split_pass_parity(self):
    self.assertEqual(self.uneven_run.returncode, 0, self.uneven_run.stderr[-3000:])
    parity = support.load(os.path.join(self.uneven_out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    self.assertEqual(parity["split"], [3, 1])
    self.assertFalse(parity["simulated"])
    self.assertTrue(parity["ranks_agree"])
    # Over the whole run too: every checked update judged and within budget.
    whole = parity["whole_run"]
    self.assertTrue(whole["pass"], whole)
    self.assertEqual(whole["judged_updates"], len(whole["check_updates"]))

  def test_the_audit_lists_the_dropout_as_parity_safe(self):
    self.assertEqual(self.uneven_run.returncode, 0, self.uneven_run.stderr[-3000:])
    audit = support.load(os.path.join(self.uneven_out, "parity.json"))["audit"]
    self.assertTrue(audit["clean"], audit["summary"])
    self.assertEqual([(f["module"], f["kind"]) for f in audit["parity_safe"]],
                     [("drop0", "keyed_dropout"), ("drop1", "keyed_dropout")])
    self.assertIn("2 parity-safe", audit["summary"])

  def test_the_dropout_acts(self):
    """The first update's gradient differs from the same model's without
    dropout: the masks are there, and parity holds with them."""
    self.assertEqual(self.uneven_run.returncode, 0, self.uneven_run.stderr[-3000:])
    plain = config(self.tmp, "plain", support.small_config(
        world=2, batch=4, ids=24, views=2, epochs=2, model=PLAIN,
        extra="local_batch_sizes: [3, 1]"))
    plain_out = os.path.join(self.tmp, "plain")
    result = train(plain, plain_out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    grads = lambda out: support.load(os.path.join(out, "first_step.json"))["gradients"]
    keyed, unkeyed = grads(self.uneven_out), grads(plain_out)
    self.assertNotEqual(keyed["fc0.weight"]["values"], unkeyed["fc0.weight"]["values"])

  def test_two_workers_on_a_masked_tail_pass_parity(self):
    tmp = support.temp_dir("keyed_tail")
    tail = config(tmp, "tail", support.small_config(world=2, batch=16, ids=12, model=KEYED))
    out = os.path.join(tmp, "out")
    result = train(tail, out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    # 12 receipts, 9 of them training ones, in an update of 16 slots.
    self.assertLess(parity["accepted_examples"], 16)

  def test_a_resumed_run_ends_where_the_uninterrupted_one_does(self):
    tmp = support.temp_dir("keyed_resume")
    text = support.small_config(world=2, batch=4, ids=24, views=2, epochs=2, model=KEYED,
                                extra="checkpoint { every_updates: 1 keep_last: 2 }")
    whole_out, part_out, results = support.stopped_and_resumed(tmp, text, 3, 6)
    for result in results:
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertEqual(support.load(os.path.join(part_out, "resume.json"))["update"], 3)
    self.assertEqual(summary(part_out)["final_parameter_hash"],
                     summary(whole_out)["final_parameter_hash"])
    # The resumed run is judged over the whole run, its first attempt's
    # points included.
    whole = support.load(os.path.join(part_out, "parity.json"))["whole_run"]
    self.assertTrue(whole["pass"], whole)
    self.assertIn(0, whole["check_updates"])

  def test_a_probability_outside_0_1_is_refused_naming_the_field(self):
    tmp = support.temp_dir("keyed_bad")
    for p in ("1", "-0.5"):
      bad = config(tmp, "bad", support.small_config(
          world=2, model=PLAIN + " dropout: " + p))
      result = train(bad, os.path.join(tmp, "out"))
      self.assertEqual(result.returncode, 2, result.stderr[-2000:])
      self.assertIn("model.dropout: " + p + " is outside [0, 1)", result.stderr)


SYNC_BN = 'architecture: "cnn" conv_channels: [4, 8] hidden_units: [8] batch_norm: "sync"'
RANK_BN = 'architecture: "cnn" conv_channels: [4, 8] hidden_units: [8] batch_norm: "per_rank"'


def batch_norm_config(model, **kw):
  args = dict(world=2, batch=4, ids=24, views=2, epochs=2, model=model,
              extra="local_batch_sizes: [3, 1]")
  args.update(kw)
  return support.small_config(**args)


class SyncBatchNormTest(unittest.TestCase):
  """Synchronized batch norm: statistics over the update's accepted
  examples on every rank and in every micro-batch."""

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("sync_bn")
    cls.uneven_out = os.path.join(cls.tmp, "uneven")
    cls.uneven = train(config(cls.tmp, "uneven", batch_norm_config(SYNC_BN)), cls.uneven_out)

  def test_two_workers_on_a_3_1_split_pass_parity_over_the_whole_run(self):
    self.assertEqual(self.uneven.returncode, 0, self.uneven.stderr[-3000:])
    parity = support.load(os.path.join(self.uneven_out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    self.assertEqual(parity["split"], [3, 1])
    self.assertEqual(parity["whole_run"]["mode"], "drift_budget")
    self.assertTrue(parity["whole_run"]["pass"])
    self.assertIn("bn1.weight", [t["name"] for t in parity["gradients"]])

  def test_the_running_statistics_are_the_same_on_every_rank(self):
    self.assertEqual(self.uneven.returncode, 0, self.uneven.stderr[-3000:])
    buffers = summary(self.uneven_out)["buffers"]
    self.assertTrue(buffers["equal"], buffers)
    self.assertEqual(buffers["ranks"], 2)
    self.assertEqual(buffers["compared"], 6)  # bn0 and bn1: mean, var, count

  def test_the_audit_lists_the_batch_norms_as_parity_safe(self):
    self.assertEqual(self.uneven.returncode, 0, self.uneven.stderr[-3000:])
    audit = support.load(os.path.join(self.uneven_out, "parity.json"))["audit"]
    self.assertTrue(audit["clean"], audit["summary"])
    self.assertEqual([(f["module"], f["kind"]) for f in audit["parity_safe"]],
                     [("bn0", "sync_batch_norm"), ("bn1", "sync_batch_norm")])

  def test_micro_batches_on_a_masked_tail_pass_parity(self):
    tmp = support.temp_dir("sync_bn_micro")
    text = batch_norm_config(SYNC_BN, batch=8, ids=12, views=1,
                             extra="local_batch_sizes: [6, 2]\naccumulation_steps: 2")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "micro", text), out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    self.assertTrue(parity["whole_run"]["pass"], parity["whole_run"])
    # The last update's tail is masked, and the whole run checks it.
    accepted = support.load(os.path.join(out, "run_manifest.json"))[
        "accepted_examples_per_update"]
    self.assertLess(accepted[-1], 8)
    self.assertEqual(parity["whole_run"]["check_updates"][-1], len(accepted) - 1)

  def test_a_resumed_run_ends_where_the_uninterrupted_one_does(self):
    tmp = support.temp_dir("sync_bn_resume")
    text = batch_norm_config(SYNC_BN, extra="local_batch_sizes: [3, 1]\n"
                             "checkpoint { every_updates: 1 keep_last: 2 }")
    whole_out, part_out, results = support.stopped_and_resumed(tmp, text, 3, 6)
    for result in results:
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertEqual(summary(part_out)["final_parameter_hash"],
                     summary(whole_out)["final_parameter_hash"])
    resumed = support.load(os.path.join(part_out, "parity.json"))
    self.assertTrue(resumed["whole_run"]["pass"], resumed["whole_run"])

  def test_per_rank_batch_norm_fails_parity_at_the_first_update_and_stops(self):
    tmp = support.temp_dir("rank_bn")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "rank", batch_norm_config(RANK_BN)), out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertFalse(parity["pass"])
    self.assertEqual([f["module"] for f in parity["audit"]["findings"]], ["bn0", "bn1"])
    self.assertEqual(summary(out)["total_updates"], 1)

  def test_a_batch_norm_the_model_cannot_hold_is_refused_naming_the_field(self):
    tmp = support.temp_dir("bn_bad")
    for model, message in (
        (PLAIN + ' batch_norm: "global"', 'model.batch_norm: unknown "global"'),
        ('architecture: "mlp" hidden_units: [8] batch_norm: "sync"',
         "model.batch_norm: a batch norm follows each conv layer, and this mlp has none")):
      result = train(config(tmp, "bad", support.small_config(world=2, model=model)),
                     os.path.join(tmp, "out"))
      self.assertEqual(result.returncode, 2, result.stderr[-2000:])
      self.assertIn(message, result.stderr)


if __name__ == "__main__":
  unittest.main()
