#!/usr/bin/python3
"""The recipes teams train with, through the REAL train binary and real
worker processes: gradient accumulation keeps the update (1 worker x 4
micro-batches, 2 x 2, 4 x 1 on a masked tail), the accumulation mistake
micro_batch_mean and per-rank clipping fail parity saying why, global
clipping and a schedule keep it, every built-in optimizer and schedule
resumes bitwise, and what is refused names its field."""
import math
import os
import sys
import unittest

import integration_support as support

# //trainer:train_with_test_plugins: train with the test-only plugins.
TRAIN_WITH_TEST_MODELS = os.path.abspath(sys.argv.pop(1))

# 12 identities, a quarter to validation: about 9 training receipts, so one
# update of 16 slots holds them all and the rest of its slots are masked.
TAIL = dict(ids=12, batch=16, epochs=1)


config = support.write_config
train = support.train


def first_step(out):
  return support.load(os.path.join(out, "first_step.json"))


def gradients(step):
  return {name: t["values"] for name, t in step["gradients"].items()}


def close(a, b, rtol=1e-5, atol=1e-7):
  return all(abs(x - y) <= atol + rtol * abs(y) for x, y in zip(a, b))


class AccumulationTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("accumulation")
    cls.runs = {}
    for world, steps in ((1, 4), (2, 2), (4, 1)):
      text = support.small_config(world=world, extra="accumulation_steps: %d" % steps, **TAIL)
      out = os.path.join(cls.tmp, "w%d_k%d" % (world, steps))
      cls.runs[(world, steps)] = (out, train(config(cls.tmp, "w%d" % world, text), out))

  def out(self, world, steps):
    out, result = self.runs[(world, steps)]
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    return out if world > 1 else os.path.join(out, "reference")

  def test_every_split_of_the_update_has_the_same_gradient(self):
    one = gradients(first_step(self.out(1, 4)))
    for world, steps in ((2, 2), (4, 1)):
      other = gradients(first_step(self.out(world, steps)))
      self.assertEqual(set(other), set(one))
      for name in one:
        self.assertTrue(close(other[name], one[name]), (world, steps, name))

  def test_the_multi_worker_runs_pass_parity_against_the_whole_batch(self):
    for world, steps in ((2, 2), (4, 1)):
      parity = support.load(os.path.join(self.out(world, steps), "parity.json"))
      self.assertTrue(parity["pass"], parity["failures"])
      self.assertEqual(parity["accepted_examples"],
                       len(first_step(self.out(1, 4))["batch"][0]["valid"]))
      # The reference computed the whole global batch in one backward.
      manifest = support.load(os.path.join(self.out(world, steps), "reference",
                                           "run_manifest.json"))
      self.assertEqual(manifest["world_size"], 1)

  def test_the_records_say_each_slots_micro_batch(self):
    batch = first_step(self.out(1, 4))["batch"][0]
    # The receipts (fewer than 16: a masked tail) in micro-batches of 4.
    slots = len(batch["valid"])
    self.assertTrue(8 < slots < 16, slots)
    self.assertEqual(batch["micro_batch"], [j // 4 for j in range(slots)])
    audit = support.load(os.path.join(self.out(2, 2), "sampler_audit.json"))
    self.assertEqual(audit["micro_batches"], 2)
    for rank in audit["epochs"][0]["ranks"]:
      self.assertEqual(rank["micro_batch"], [j // 4 for j in range(rank["num_slots"])])

  def test_micro_batch_means_fail_parity_and_say_why(self):
    text = support.small_config(world=2, weighting="micro_batch_mean",
                                extra="accumulation_steps: 2", **TAIL)
    out = os.path.join(self.tmp, "micro_batch_mean")
    result = train(config(self.tmp, "micro_batch_mean", text), out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertFalse(parity["pass"])
    why = [f for f in parity["failures"] if "micro_batch_mean" in f]
    self.assertEqual(len(why), 1, parity["failures"])
    self.assertIn("different numbers of valid examples", why[0])
    self.assertIn("use global_count", why[0])


class ClippingAndScheduleTest(unittest.TestCase):

  def test_global_clipping_and_a_schedule_keep_parity(self):
    tmp = support.temp_dir("clip_global")
    schedule = ('lr_schedule { name: "linear_warmup_cosine" options { '
                '[type.googleapis.com/receipt_parity.LinearWarmupCosineOptions] '
                '{ warmup_updates: 2 total_updates: 10 } } }')
    text = support.small_config(
        world=2, batch=4, epochs=2,
        extra="local_batch_sizes: [3, 1]\nclip_grad_norm { max_norm: 0.01 }\n" + schedule)
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "c", text), out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    step = first_step(out)
    self.assertLess(step["clip_factor"], 1.0)
    self.assertGreater(step["gradient_norm"], 0.01)
    # Update u steps at 0.05 * (u + 1) / 2 during the warmup, then the cosine.
    self.assertEqual(step["learning_rate"], 0.05 * 1 / 2)
    curve = support.load(os.path.join(out, "run_summary.json"))["loss_curve"]
    self.assertEqual(curve[1]["learning_rate"], 0.05)
    self.assertAlmostEqual(curve[4]["learning_rate"],
                           0.05 * 0.5 * (1 + math.cos(math.pi * 2 / 8)), places=15)
    for point in curve:
      self.assertEqual(point["rank_clip_factors"][0], point["rank_clip_factors"][1])

  def test_local_clipping_fails_parity_and_says_why(self):
    tmp = support.temp_dir("clip_local")
    text = support.small_config(
        world=2, batch=4,
        extra="local_batch_sizes: [3, 1]\nclip_grad_norm { max_norm: 0.01 scope: \"local\" }")
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "c", text), out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    why = [f for f in parity["failures"] if "scope local" in f]
    self.assertEqual(len(why), 1, parity["failures"])
    self.assertIn("use scope global", why[0])


OPTIMIZER = ('optimizer {{ name: "{name}" options {{ '
             '[type.googleapis.com/receipt_parity.{type}] {{ {options} }} }} }}')
SCHEDULE = ('lr_schedule {{ name: "{name}" options {{ '
            '[type.googleapis.com/receipt_parity.{type}] {{ {options} }} }} }}')


class ResumeTest(unittest.TestCase):
  """Each built-in optimizer and schedule, stopped after 3 updates (a
  finished run) and continued to 6 from its newest generation, ends with
  the parameters of a run that went to 6 at once."""

  def resumes_bitwise(self, name, optimizer, schedule):
    tmp = support.temp_dir(name)
    text = (support.small_config(world=2, batch=4, epochs=2, ids=24).replace(
        "optimizer { sgd { learning_rate: 0.05 momentum: 0.9 } }", optimizer) +
            schedule + "\ncheckpoint { every_updates: 1 keep_last: 2 }\n")
    whole_out, part_out, results = support.stopped_and_resumed(tmp, text, 3, 6)
    for result in results:
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    resume = support.load(os.path.join(part_out, "resume.json"))
    self.assertEqual(resume["update"], 3)
    summary = lambda out: support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(summary(part_out)["final_parameter_hash"],
                     summary(whole_out)["final_parameter_hash"])
    # The continued run's first update stepped at bitwise the rate the
    # uninterrupted run used for update 3.
    self.assertEqual(summary(part_out)["loss_curve"][0]["learning_rate"],
                     summary(whole_out)["loss_curve"][3]["learning_rate"])

  def test_sgd_with_a_step_schedule(self):
    self.resumes_bitwise(
        "sgd_step",
        OPTIMIZER.format(name="sgd", type="SgdOptions",
                         options="lr: 0.05 momentum: 0.9 nesterov: true"),
        SCHEDULE.format(name="step", type="StepScheduleOptions",
                        options="step_updates: 2 gamma: 0.5"))

  def test_adam_with_amsgrad_and_a_warmup_cosine(self):
    self.resumes_bitwise(
        "adam_cosine",
        OPTIMIZER.format(name="adam", type="AdamOptions", options="lr: 0.01 amsgrad: true"),
        SCHEDULE.format(name="linear_warmup_cosine", type="LinearWarmupCosineOptions",
                        options="warmup_updates: 2 total_updates: 5 min_factor: 0.1"))

  def test_adamw_with_groups_and_the_constant_schedule(self):
    self.resumes_bitwise(
        "adamw_constant",
        OPTIMIZER.format(name="adamw", type="AdamWOptions",
                         options="lr: 0.01 weight_decay_excludes_biases_and_norms: true"),
        "")


class ContinuationTest(unittest.TestCase):
  """A finished run continued at a lower learning rate: refused as another
  config without --allow_recipe_change (naming the field and the flag);
  with it, a new attempt in run_state.json that records the change, and
  the parameters of an uninterrupted run whose step schedule halves the
  rate at the same update."""

  def test_a_lower_learning_rate_continues_the_run_as_a_new_attempt(self):
    tmp = support.temp_dir("continuation")
    base = support.small_config(world=2, batch=4, epochs=2, ids=24) + (
        "\ncheckpoint { every_updates: 1 keep_last: 2 }\n")
    stop_at = lambda text, n: text.replace(
        "log_every_updates: 1000", "log_every_updates: 1000 max_updates: %d" % n)
    halved = SCHEDULE.format(name="step", type="StepScheduleOptions",
                             options="step_updates: 3 gamma: 0.5")
    whole = config(tmp, "whole", stop_at(base, 6) + halved)
    first = config(tmp, "first", stop_at(base, 3))
    lower = config(tmp, "lower", stop_at(base, 6).replace("learning_rate: 0.05",
                                                          "learning_rate: 0.025"))
    whole_out, out = os.path.join(tmp, "whole"), os.path.join(tmp, "out")
    for result in (train(whole, whole_out), train(first, out)):
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])

    refused = train(lower, out)
    self.assertEqual(refused.returncode, 2, refused.stderr[-3000:])
    self.assertIn("optimizer.sgd.learning_rate: 0.05 -> 0.025", refused.stderr)
    self.assertIn("pass --allow_recipe_change", refused.stderr)
    state = support.load(os.path.join(out, "run_state.json"))
    self.assertEqual(len(state["attempts"]), 1)  # nothing changed

    result = train(lower, out, "--allow_recipe_change")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    state = support.load(os.path.join(out, "run_state.json"))
    self.assertEqual([a["start"] for a in state["attempts"]], ["fresh", "continue"])
    self.assertEqual(state["attempts"][0]["recipe_changes"], [])
    self.assertEqual(len(state["attempts"][1]["recipe_changes"]), 1)
    self.assertIn("optimizer.sgd.learning_rate: 0.05 -> 0.025",
                  state["attempts"][1]["recipe_changes"][0])
    self.assertEqual(support.load(os.path.join(out, "resume.json"))["update"], 3)
    summary = lambda o: support.load(os.path.join(o, "run_summary.json"))
    self.assertEqual(summary(out)["loss_curve"][0]["learning_rate"], 0.025)
    self.assertEqual(summary(whole_out)["loss_curve"][3]["learning_rate"], 0.025)
    self.assertEqual(summary(out)["final_parameter_hash"],
                     summary(whole_out)["final_parameter_hash"])
    # The first update, the reference's, was taken with the first recipe.
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    # The folder now holds the new recipe: the first one is the change.
    again = train(first, out)
    self.assertEqual(again.returncode, 2, again.stderr[-3000:])
    self.assertIn("optimizer.sgd.learning_rate: 0.025 -> 0.05", again.stderr)


class Bf16Test(unittest.TestCase):

  def test_bf16_passes_parity_within_a_derived_budget_far_below_one_update(self):
    tmp = support.temp_dir("bf16")
    text = support.small_config(world=2, batch=4, extra='precision: "bf16"')
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "c", text), out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity["failures"])
    derived = parity["derived"]
    self.assertEqual(derived["derived_for"], "bf16")
    self.assertEqual(derived["safety_factor"], 4)
    # The floor is the config's tolerance.
    self.assertEqual((parity["rtol"], parity["atol"]), (1e-6, 1e-7))
    self.assertGreater(derived["gradient_error"], 0)  # bf16 really rounded
    # Each tensor's element-wise budget is judged where it is at most a
    # tenth of what one update changes of it, and listed as left to the
    # replay where not; nothing is dropped silently.
    self.assertEqual(derived["most_share_of_one_update"], 0.1)
    not_judged = set(derived.get("not_judged_tensors", []))
    self.assertEqual(derived.get("judged_tensors", 0) + len(not_judged), len(derived["tensors"]))
    self.assertGreater(derived.get("judged_tensors", 0), 0)
    for budget, gradient in zip(derived["tensors"], parity["gradients"]):
      self.assertEqual(budget["name"], gradient["name"])
      self.assertGreaterEqual(budget["gradient_atol"], 1e-7)
      self.assertEqual(gradient["atol"], budget["gradient_atol"])
      self.assertEqual(gradient.get("rtol", 0), budget.get("gradient_rtol", 0))
      if budget["name"] in not_judged:
        self.assertFalse(gradient["judged"])
        self.assertGreater(budget["share_of_one_update"], 0.1)
        continue
      self.assertLessEqual(budget["share_of_one_update"], 0.1)
      self.assertTrue(gradient["pass"])
    self.assertIn("against the same update in fp64", parity["tolerance_reason"])
    # The replay checked every tensor of the checked updates bit for bit.
    replay = parity["replay"]
    self.assertTrue(replay["pass"])
    self.assertEqual(replay["bitwise_updates"], replay["replayed_updates"])
    if not_judged:
      self.assertIn("left to the replay", result.stdout)
    manifest = support.load(os.path.join(out, "run_manifest.json"))
    self.assertEqual(manifest["precision"], "bf16")
    # The fp32 run of the same config trains otherwise: bf16 really ran.
    fp32_out = os.path.join(tmp, "fp32")
    result = train(config(tmp, "fp32", support.small_config(world=2, batch=4)), fp32_out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertNotEqual(first_step(out)["gradients"], first_step(fp32_out)["gradients"])


  def test_the_derived_budget_still_fails_the_weighting_mistake(self):
    # rank_mean on a 3 + 1 split: each rank's mean, averaged, is not the
    # global batch's; the bf16 budget does not hide it.
    tmp = support.temp_dir("bf16_mistake")
    text = support.small_config(world=2, batch=4, weighting="rank_mean",
                                extra='precision: "bf16"\nlocal_batch_sizes: [3, 1]')
    out = os.path.join(tmp, "out")
    result = train(config(tmp, "c", text), out)
    self.assertEqual(result.returncode, 3, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertGreater(parity["derived"]["judged_tensors"], 0)
    self.assertFalse(parity["pass"])
    self.assertTrue(any("its own derived budget" in f for f in parity["failures"]),
                    parity["failures"])


class RefusedTest(unittest.TestCase):

  def refused(self, extra, *expected, **kwargs):
    tmp = support.temp_dir("refused")
    path = config(tmp, "c", support.small_config(extra=extra, **kwargs))
    result = support.run_train("--config=" + path, "--validate_only")
    self.assertEqual(result.returncode, 2, result.stderr)
    for text in expected:
      self.assertIn(text, result.stderr)

  def test_what_is_refused_names_its_field(self):
    self.refused("accumulation_steps: 0", "accumulation_steps: must be >= 1")
    self.refused("accumulation_steps: 3", "accumulation_steps: 3 micro-batches do not cut "
                 "rank 0's local batch of 4")
    self.refused("clip_grad_norm { max_norm: 0 }", "clip_grad_norm.max_norm: must be > 0")
    self.refused("clip_grad_norm { max_norm: nan }", "clip_grad_norm.max_norm: must be > 0")
    self.refused('clip_grad_norm { max_norm: 1 scope: "rank" }', "clip_grad_norm.scope")
    self.refused(SCHEDULE.format(name="linear_warmup_cosine",
                                 type="LinearWarmupCosineOptions",
                                 options="warmup_updates: 500 total_updates: 600"),
                 "lr_schedule.options: warmup_updates: 500 is more than the run's")
    self.refused(SCHEDULE.format(name="step", type="StepScheduleOptions", options=""),
                 "lr_schedule.options: step_updates")
    self.refused('precision: "fp16"', "precision: unknown 'fp16'; known: fp32, bf16")

  def test_bf16_with_a_model_that_cannot_run_under_autocast_is_refused(self):
    tmp = support.temp_dir("fp32_only")
    text = support.small_config().replace(
        'model { architecture: "cnn" conv_channels: [4] hidden_units: [8] }',
        'model { name: "test_batch_norm_cnn" options { '
        '[type.googleapis.com/receipt_parity.testing.BatchNormTestCnnOptions] '
        '{ fp32_only: true } } }') + 'precision: "bf16"\n'
    path = config(tmp, "c", text)
    result = support.run_train_binary(TRAIN_WITH_TEST_MODELS, "--config=" + path,
                                      "--validate_only")
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("precision: bf16: model test_batch_norm_cnn cannot run under bfloat16 "
                  "autocast: this model computes in fp32 only", result.stderr)
    # The same model in fp32 is fine.
    path = config(tmp, "fp32", text.replace('precision: "bf16"', ""))
    result = support.run_train_binary(TRAIN_WITH_TEST_MODELS, "--config=" + path,
                                      "--validate_only")
    self.assertEqual(result.returncode, 0, result.stderr)


if __name__ == "__main__":
  unittest.main()
