#!/usr/bin/python3
"""Checkpoint files read like untrusted input (issue 26), through the REAL
train binary and two worker processes: a run stopped after 3 updates has
its newest generation damaged as a disk, a bad copy or a colleague would
damage it (a shard grown to 64 GiB as a sparse file, a shard or MANIFEST
replaced by a FIFO, a shard linked to /dev/zero, the generation itself a
link to one kept outside the run folder); the rerun never crashes or
hangs, falls back to generation 2 with the reason in resume.json, sets the
damaged generation aside, and ends with the uninterrupted run's parameters;
what the link pointed to is byte-identical afterwards."""
import hashlib
import os
import shutil
import unittest

import integration_support as support


def tree_digest(folder):
  """Every file under `folder` by relative path, with its SHA-1."""
  digest = {}
  for base, _, files in os.walk(folder):
    for name in files:
      path = os.path.join(base, name)
      with open(path, "rb") as f:
        digest[os.path.relpath(path, folder)] = hashlib.sha1(f.read()).hexdigest()
  return digest


class DamagedCheckpointTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = os.path.realpath(support.temp_dir("damaged"))
    cls.text = support.small_config(world=2, batch=4, ids=24, epochs=2,
                                    extra="checkpoint { every_updates: 1 keep_last: 3 }")
    cls.whole_out, cls.stopped_out, results = support.stopped_and_resumed(
        cls.tmp, cls.text, 3, 6)
    cls.results = results
    # A pristine copy of the run stopped at 3: each case damages its own copy.
    cls.pristine = os.path.join(cls.tmp, "pristine")
    stop = support.write_config(cls.tmp, "stop", cls.text.replace(
        "log_every_updates: 1000", "log_every_updates: 1000 max_updates: 3"))
    cls.stop_result = support.train(stop, cls.pristine)
    cls.whole = os.path.join(cls.tmp, "whole.pbtxt")

  def resumed_after(self, name, damage):
    """A copy of the run stopped at 3, `damage`d in generation 3, run on to 6."""
    for result in self.results + (self.stop_result,):
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    out = os.path.join(self.tmp, name)
    shutil.copytree(self.pristine, out, symlinks=True)
    damage(os.path.join(out, "checkpoints", "gen-000003"))
    result = support.run_train("--config=" + self.whole, "--out=" + out, timeout=120)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    resume = support.load(os.path.join(out, "resume.json"))
    self.assertEqual(resume["update"], 2)
    self.assertEqual(len(resume["skipped"]), 1, resume["skipped"])
    self.assertTrue(resume["skipped"][0].startswith("gen-000003: "), resume["skipped"])
    self.assertEqual(len(resume["set_aside"]), 1, resume["set_aside"])
    summary = lambda folder: support.load(os.path.join(folder, "run_summary.json"))
    self.assertEqual(summary(out)["final_parameter_hash"],
                     summary(self.whole_out)["final_parameter_hash"])
    return resume["skipped"][0]

  def test_a_sparse_64_gib_shard(self):
    def grow(gen):
      with open(os.path.join(gen, "shard-rank-00001.pt"), "r+b") as f:
        f.truncate(64 << 30)
    self.assertIn("shard-rank-00001.pt: size 68719476736 != manifest",
                  self.resumed_after("sparse", grow))

  def test_a_shard_that_is_a_fifo(self):
    def fifo(gen):
      os.remove(os.path.join(gen, "shard-rank-00000.pt"))
      os.mkfifo(os.path.join(gen, "shard-rank-00000.pt"))
    self.assertIn("shard-rank-00000.pt is a FIFO, not a regular file",
                  self.resumed_after("fifo_shard", fifo))

  def test_a_manifest_that_is_a_fifo(self):
    def fifo(gen):
      os.remove(os.path.join(gen, "MANIFEST"))
      os.mkfifo(os.path.join(gen, "MANIFEST"))
    self.assertIn("MANIFEST is a FIFO, not a regular file",
                  self.resumed_after("fifo_manifest", fifo))

  def test_a_shard_linked_to_a_device(self):
    def device(gen):
      os.remove(os.path.join(gen, "shard-rank-00001.pt"))
      os.symlink("/dev/zero", os.path.join(gen, "shard-rank-00001.pt"))
    self.assertIn("shard-rank-00001.pt: a link leading out of",
                  self.resumed_after("device", device))

  def test_a_generation_linked_from_outside_is_not_resumed_from_nor_touched(self):
    kept = os.path.join(self.tmp, "kept_elsewhere")
    def link(gen):
      shutil.copytree(gen, os.path.join(kept, "gen-000003"))
      shutil.rmtree(gen)
      os.symlink(os.path.join(kept, "gen-000003"), gen)
    reason = self.resumed_after("linked", link)
    self.assertIn("gen-000003: a link leading out of", reason)
    # What the link pointed to: all there, byte for byte as the run saved it.
    after = tree_digest(kept)
    pristine = tree_digest(os.path.join(self.pristine, "checkpoints", "gen-000003"))
    self.assertEqual({os.path.relpath(k, "gen-000003"): v for k, v in after.items()},
                     pristine)
    self.assertTrue(os.path.islink(os.path.join(self.tmp, "linked", "checkpoints",
                                                "corrupt-gen-000003")))


if __name__ == "__main__":
  unittest.main()
