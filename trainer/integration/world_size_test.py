#!/usr/bin/python3
"""World size is not part of the result (issue 28), through the REAL train
binary and real worker processes: with the `global_batches` sampler, runs
on 2, 3 and 4 workers (even and uneven local batches, with and without
micro-batches) train the same receipts in every update, as their
sampler_audit.json files show (a one-worker run writes none; the audit at
world size 1 is samplers/global_batches_test's), and each multi-worker run passes parity
against its one-worker reference."""
import os
import unittest

import integration_support as support

# 8 slots per update dealt five ways: (world, local batches, micro-batches).
DEALS = (
    (1, None, 1),
    (2, [6, 2], 2),
    (3, [3, 3, 2], 1),
    (4, [2, 2, 2, 2], 2),
)


def deal_config(world, local, micro):
  extra = ""
  if local:
    extra += "local_batch_sizes: [%s]\n" % ", ".join(str(b) for b in local)
  if micro > 1:
    extra += "accumulation_steps: %d\n" % micro
  return support.small_config(ids=30, batch=8, world=world, epochs=2,
                              sampler="global_batches", extra=extra)


def updates(audit):
  """Every update's (sorted valid ids, masked slots), epoch by epoch."""
  return [[(tuple(u["receipt_ids"]), u.get("masked_slots", 0)) for u in epoch["updates"]]
          for epoch in audit["epochs"]]


class GlobalBatchesAcrossWorldSizesTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("world_size")
    cls.runs = {}
    for world, local, micro in DEALS:
      name = "w%d" % world
      out = os.path.join(cls.tmp, name)
      config = support.write_config(cls.tmp, name, deal_config(world, local, micro))
      cls.runs[world] = (support.train(config, out), out)

  def audit(self, world):
    result, out = self.runs[world]
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    return support.load(os.path.join(out, "sampler_audit.json"))

  def test_every_update_trains_the_same_receipts_at_1_2_3_and_4_workers(self):
    # A one-worker run writes no sampler_audit.json: its updates are the
    # audit's at world size 1 (samplers/global_batches_test checks those).
    self.assertEqual(self.runs[1][0].returncode, 0, self.runs[1][0].stderr[-3000:])
    reference = self.audit(2)
    self.assertTrue(reference["world_size_independent"])
    self.assertEqual(reference["policy"], "global_batches")
    expected = updates(reference)
    self.assertEqual(len(expected), 2)
    # The last update of an epoch is filled to 8 slots with masked ones.
    self.assertGreater(expected[0][-1][1], 0)
    for world, _, _ in DEALS[2:]:
      audit = self.audit(world)
      self.assertEqual(audit["world_size"], world)
      self.assertEqual(updates(audit), expected, "world size %d" % world)
      for epoch in audit["epochs"]:
        self.assertEqual(epoch.get("duplicated_ids", []), [])
        self.assertEqual(epoch.get("dropped_ids", []), [])

  def test_each_multi_worker_run_passes_parity(self):
    for world, _, _ in DEALS[1:]:
      result, out = self.runs[world]
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])
      parity = support.load(os.path.join(out, "parity.json"))
      self.assertTrue(parity["pass"], (world, parity.get("failures")))
      self.assertTrue(parity["whole_run"]["pass"], (world, parity["whole_run"]))


if __name__ == "__main__":
  unittest.main()
