#!/usr/bin/python3
"""checkpoint { async: true } on real two-worker runs: the saves are written
in the background and train the same model as synchronous saves, a run
stopped and resumed from them ends where the whole run ends, and a rank
SIGKILLed inside a background write leaves only generations that restore,
from which the restart recovers bitwise.

Argument: the train binary."""
import os
import sys
import unittest

import integration_support as support

CHECKPOINTS = "checkpoint { every_updates: 2 keep_last: 2%s }"


def config(tmp, name, background, extra=""):
  text = support.small_config(world=2, epochs=3, extra=CHECKPOINTS % (
      " async: true" if background else "") + extra)
  return support.write(os.path.join(tmp, name + ".pbtxt"), text)


def advertised(out):
  """The generations of the run in `out` that have a MANIFEST, sorted."""
  root = os.path.join(out, "checkpoints")
  return [g for g in sorted(os.listdir(root)) if os.path.exists(os.path.join(root, g, "MANIFEST"))]


class AsyncSaveTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    # The uninterrupted run with background saves, which every test
    # compares with.
    cls.tmp = support.temp_dir("async")
    cls.path = config(cls.tmp, "async", True)
    cls.whole = os.path.join(cls.tmp, "async")
    cls.uninterrupted = support.train(cls.path, cls.whole, "--whole_run_parity=false")

  def setUp(self):
    self.assertEqual(self.uninterrupted.returncode, 0, self.uninterrupted.stderr[-2000:])

  def test_background_saves_train_the_same_model_and_say_what_they_cost(self):
    outs = {"sync": os.path.join(self.tmp, "sync"), "async": self.whole}
    result = support.train(config(self.tmp, "sync", False), outs["sync"],
                           "--whole_run_parity=false")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    self.assertEqual(support.final_hash(outs["async"]), support.final_hash(outs["sync"]))
    sync = support.load(os.path.join(outs["sync"], "run_summary.json"))["checkpoint"]
    background = support.load(os.path.join(outs["async"], "run_summary.json"))["checkpoint"]
    self.assertTrue(background["async"])
    self.assertFalse(sync["async"])
    saved = background["generations_saved"]
    self.assertEqual(saved, sync["generations_saved"])
    self.assertEqual(len(background["blocked_seconds"]), saved)
    self.assertEqual(len(background["save_seconds"]), saved)
    self.assertGreater(background["blocked_seconds_median"], 0)
    self.assertGreater(background["save_seconds_median"], 0)
    self.assertAlmostEqual(background["blocked_vs_save_ratio"],
                           background["blocked_seconds_median"] /
                           background["save_seconds_median"])
    # A synchronous save blocks for all of itself.
    self.assertEqual(sync["blocked_seconds"], sync["save_seconds"])
    self.assertLessEqual(background["saves_that_waited"], saved - 1)
    # Retention ran in the writer: the newest keep_last generations remain,
    # each advertised.
    folders = sorted(os.listdir(os.path.join(outs["async"], "checkpoints")))
    self.assertEqual(folders, ["gen-%06d" % g for g in (saved - 1, saved)])
    self.assertEqual(advertised(outs["async"]), folders)

  def test_a_run_stopped_and_resumed_from_background_saves_ends_as_the_whole(self):
    tmp = support.temp_dir("async_resume")
    text = support.small_config(world=2, epochs=3, extra=CHECKPOINTS % " async: true")
    whole, part, results = support.stopped_and_resumed(tmp, text, stop_at=5, total=12)
    for result in results:
      self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    resumed = support.load(os.path.join(part, "resume.json"))
    # Stopped after update 5: the save after update 4 was advertised before
    # the run ended (the end waits for the write in flight).
    self.assertEqual(resumed["update"], 4)
    self.assertEqual(support.final_hash(part), support.final_hash(whole))

  def test_a_rank_killed_inside_a_background_write_recovers_bitwise(self):
    tmp, path, whole = self.tmp, self.path, self.whole
    for rank in (0, 1):
      with self.subTest(rank=rank):
        out = os.path.join(tmp, "killed-%d" % rank)
        killed = support.train(path, out, "--whole_run_parity=false",
                               "--kill_rank=%d" % rank, "--kill_phase=save_background",
                               "--kill_update=4", "--kill_delay_us=0")
        self.assertNotEqual(killed.returncode, 0)
        self.assertIn("fault injection: rank %d kills itself (SIGKILL) inside "
                      "save_background of update 4" % rank, killed.stderr)
        # Every generation advertised restores, and it is 1 (update 2): the
        # write of generation 2 died before its MANIFEST.
        self.assertEqual(advertised(out), ["gen-000001"])
        restarted = support.train(path, out, "--whole_run_parity=false")
        self.assertEqual(restarted.returncode, 0, restarted.stderr[-2000:])
        resumed = support.load(os.path.join(out, "resume.json"))
        self.assertEqual((resumed["generation"], resumed["update"]), (1, 2))
        self.assertEqual(support.final_hash(out), support.final_hash(whole))

  def test_a_preemption_during_a_background_write_stops_saved_and_resumes_bitwise(self):
    # SIGTERM to rank 1 while the save after update 4 is being written:
    # the run stops at an update boundary its ranks agree on, the write in
    # flight is waited for, the stop's own save is written, exit 4; the
    # rerun resumes at the stop with nothing redone.
    path, whole = self.path, self.whole
    out = os.path.join(self.tmp, "term")
    stopped = support.train(path, out, "--whole_run_parity=false", "--kill_rank=1",
                            "--kill_phase=save_background", "--kill_update=4",
                            "--kill_signal=SIGTERM", "--kill_delay_us=0")
    self.assertEqual(stopped.returncode, 4, stopped.stderr[-3000:])
    attempt = support.load(os.path.join(out, "run_state.json"))["attempts"][-1]
    self.assertEqual(attempt["ended"], "preempted")
    self.assertTrue(attempt["saved_at_end"])
    stop = attempt["ended_at_update"]
    self.assertGreaterEqual(stop, 4)
    newest = advertised(out)[-1]
    resumed = support.train(path, out, "--whole_run_parity=false")
    self.assertEqual(resumed.returncode, 0, resumed.stderr[-2000:])
    record = support.load(os.path.join(out, "resume.json"))
    self.assertEqual(record["update"], stop)
    self.assertEqual("gen-%06d" % record["generation"], newest)
    self.assertEqual(support.final_hash(out), support.final_hash(whole))


if __name__ == "__main__":
  unittest.main()
