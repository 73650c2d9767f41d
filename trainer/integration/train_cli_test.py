#!/usr/bin/python3
"""The train binary as a user meets it: registration, bad input, the
pinned one-worker reference, the paths of a config, and the own-data
walk-through (docs/data.md). A team's shared-library plugins through the
binary: examples/plugins/plugins_cli_test.py."""
import glob
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import unittest
import zlib

import integration_support as support

EXPECTED_PLUGINS = sys.argv.pop(1).split(",")


class RegistrationTest(unittest.TestCase):

  def test_every_builtin_plugin_is_registered_in_the_linked_binary(self):
    result = support.run_train("--list_plugins")
    self.assertEqual(result.returncode, 0, result.stderr)
    # Exactly the list of plugins/builtin_plugins.bzl (passed as an
    # argument): none dropped by the linker, none registered beside it.
    registered = result.stdout.split()
    self.assertEqual(len(registered), len(set(registered)), registered)
    self.assertEqual(sorted(registered), sorted(EXPECTED_PLUGINS))
    self.assertEqual(len(EXPECTED_PLUGINS), len(set(EXPECTED_PLUGINS)))

  def test_shipped_configs_validate(self):
    configs = sorted(glob.glob("configs/*.pbtxt"))
    self.assertGreaterEqual(len(configs), 6)
    for config in configs:
      result = support.run_train("--config=" + config, "--validate_only")
      self.assertEqual(result.returncode, 0, config + ": " + result.stderr)
      self.assertIn("fingerprint", result.stdout)


class BadInputTest(unittest.TestCase):

  def check_refused(self, text, *expected):
    tmp = support.temp_dir("bad")
    config = support.write(os.path.join(tmp, "bad.pbtxt"), text)
    out = os.path.join(tmp, "out")
    result = support.run_train("--config=" + config, "--out=" + out)
    self.assertEqual(result.returncode, 2, result.stderr)
    for text in expected:
      self.assertIn(text.replace("CONFIG", config), result.stderr)
    self.assertFalse(os.path.exists(out), "nothing may be written")

  def test_unsupported_precision_names_file_line_column_and_field(self):
    text = support.small_config() + 'precision: "fp16"\n'
    line = text.count("\n")
    self.check_refused(text, "CONFIG:%d:1: precision: unknown 'fp16'" % line)

  def test_epochs_whose_run_would_not_end_are_refused_at_once(self):
    """A number of epochs whose updates a run cannot count (more than its
    artifacts record) is refused at the start, naming the field; a large
    one it can count validates without planning every epoch."""
    tmp = support.temp_dir("epochs")
    huge = support.small_config(world=2).replace("epochs: 1", "epochs: 2147483647")
    config = support.write(os.path.join(tmp, "huge.pbtxt"), huge)
    result = support.run_train("--config=" + config, "--validate_only", timeout=60)
    self.assertEqual(result.returncode, 2, result.stderr[-2000:])
    line = huge[:huge.index("epochs: 2147483647")].count("\n") + 1
    self.assertIn("%s:%d:1: epochs: 2147483647 epochs of " % (config, line), result.stderr)
    large = support.write(os.path.join(tmp, "large.pbtxt"),
                          huge.replace("epochs: 2147483647", "epochs: 100000000"))
    result = support.run_train("--config=" + large, "--validate_only", timeout=60)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])

  def test_syntax_error_names_file_line_column(self):
    self.check_refused("world_size: 1\nglobal_batch: many\n", "CONFIG:2:15:")

  def test_nccl_on_the_cpu_is_refused(self):
    self.check_refused(support.small_config() + 'backend: "nccl"\n',
                       "backend: nccl reduces CUDA tensors only")

  @unittest.skipIf(os.path.exists("/dev/nvidia0"), "a GPU is present")
  def test_cuda_and_nccl_are_refused_without_a_gpu(self):
    # The CUDA support library is loaded and counts no GPU here.
    text = support.small_config() + 'device: "cuda"\n'
    self.check_refused(text, 'CONFIG:%d:1: device: "cuda" needs a GPU, '
                       "and none is visible here" % text.count("\n"))
    self.check_refused(support.small_config(world=2) +
                       'device: "cuda"\nbackend: "nccl"\n',
                       'device: "cuda" needs a GPU')

  def test_unknown_plugin_lists_the_registered_names(self):
    self.check_refused(support.small_config(sampler="round_robin"),
                       "sampler.name: no sampler_policy plugin named "
                       "'round_robin'; registered: drop_tail, duplicate_pad, "
                       "global_batches, masked_tail")

  def test_plugin_options_of_another_type_are_refused(self):
    text = support.small_config().replace(
        'reducer { name: "allreduce_sum" }',
        'reducer { name: "allreduce_sum" options { '
        '[type.googleapis.com/receipt_parity.MaskedTailOptions] { } } }')
    self.check_refused(text, "reducer.options:", "MaskedTailOptions")

  def test_missing_manifest_is_named(self):
    text = support.small_config().replace(
        "synthetic { num_identities: 40 rare_class_fraction: 0.05 seed: 3 }",
        'manifest_path: "/nonexistent/receipts.csv"')
    self.check_refused(text, "/nonexistent/receipts.csv")

  @unittest.skipIf(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") > 500 << 30,
                   "a machine this large could start them")
  def test_more_local_ranks_than_this_machine_can_hold_are_refused(self):
    text = support.small_config(world=4000, batch=4000)
    self.check_refused(text, "world_size: 4000 ranks on this machine need about")

  def test_missing_plugin_library_is_named(self):
    self.check_refused(
        'plugin_library: "/nonexistent/libx.so"\n' + support.small_config(),
        "CONFIG:1:1: plugin_library: plugin library /nonexistent/libx.so: no such file")

  def test_options_of_an_unknown_type_say_where_the_library_should_be(self):
    selection = ('metric_dedup { name: "by_receipt_id" options { '
                 '[type.googleapis.com/receipt_parity.MySumOptions] { } } }')
    text = support.small_config().replace('metric_dedup { name: "by_receipt_id" }',
                                          selection)
    line = [n for n, l in enumerate(text.split("\n"), 1) if "MySumOptions" in l][0]
    self.check_refused(text, "CONFIG:%d:" % line,
                       "no plugin_library is listed in the config")


  def line_of(self, text, needle):
    """1-based line and column of `needle` in `text`."""
    for number, line in enumerate(text.split("\n"), 1):
      if needle in line:
        return number, line.index(needle) + 1
    self.fail(needle)

  def test_bad_model_settings_are_refused_with_their_location(self):
    text = support.small_config().replace("conv_channels: [4]", "conv_channels: [4, 0]")
    line, column = self.line_of(text, "conv_channels")
    self.check_refused(text, "CONFIG:%d:%d: model.conv_channels: must be positive, got 0"
                       % (line, column))
    text = support.small_config().replace('architecture: "cnn"', 'architecture: "rnn"')
    line, column = self.line_of(text, "architecture")
    self.check_refused(text, "CONFIG:%d:%d: model.architecture: unknown 'rnn'; known: "
                       "cnn, mlp, linear" % (line, column))

  def test_keep_last_zero_is_refused_while_saving(self):
    text = support.small_config(extra="checkpoint { every_updates: 2 keep_last: 0 }")
    line, column = self.line_of(text, "keep_last")
    self.check_refused(text, "CONFIG:%d:%d: checkpoint.keep_last: 0 keeps no generation"
                       % (line, column))

  def validate(self, text):
    tmp = support.temp_dir("validate")
    config = support.write(os.path.join(tmp, "v.pbtxt"), text)
    start = time.monotonic()
    result = support.run_train("--config=" + config, "--validate_only")
    return result, time.monotonic() - start

  def test_validate_only_refuses_a_bad_plugin_before_generating_any_receipt(self):
    # A million 512x512 receipts would take many minutes and about a
    # terabyte of pixels: the plugin is refused before any is generated.
    text = support.small_config(ids=1000000, sampler="round_robin").replace(
        "image_size: 16", "image_size: 512")
    result, seconds = self.validate(text)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("sampler.name: no sampler_policy plugin named 'round_robin'",
                  result.stderr)
    self.assertLess(seconds, 30)

  def test_a_missing_manifest_and_a_bad_plugin_report_the_plugin_unread(self):
    text = support.small_config(weighting="nope").replace(
        "synthetic { num_identities: 40 rare_class_fraction: 0.05 seed: 3 }",
        'manifest_path: "/nonexistent/receipts.csv"')
    result, _ = self.validate(text)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("loss_weighting.name: no loss_weighting plugin named 'nope'",
                  result.stderr)
    self.assertNotIn("/nonexistent/receipts.csv", result.stderr)


class ReferenceTest(unittest.TestCase):

  def test_two_runs_write_byte_identical_first_step_json(self):
    tmp = support.temp_dir("ref")
    config = support.write(os.path.join(tmp, "one.pbtxt"),
                           support.small_config(epochs=2))
    outputs = []
    for name in ("a", "b"):
      out = os.path.join(tmp, name)
      result = support.run_train("--config=" + config, "--out=" + out)
      self.assertEqual(result.returncode, 0, result.stderr)
      with open(os.path.join(out, "reference", "first_step.json"), "rb") as f:
        outputs.append(f.read())
    self.assertEqual(outputs[0], outputs[1])

    reference = os.path.join(tmp, "a", "reference")
    step = support.load(os.path.join(reference, "first_step.json"))
    for key in ("parameters_before", "gradients", "parameters_after"):
      self.assertEqual(set(step[key]), set(step["parameter_order"]))
      for tensor in step[key].values():
        size = 1
        for d in tensor["shape"]:
          size *= d
        self.assertEqual(len(tensor["values"]), size)
    self.assertNotEqual(step["parameters_before"], step["parameters_after"])
    self.assertEqual(len(step["batch"]), 1)
    self.assertEqual(len(step["batch"][0]["receipt_ids"]), 4)

    manifest = support.load(os.path.join(reference, "run_manifest.json"))
    self.assertEqual(manifest["label_map"], ["ok", "blurred", "faded", "cropped"])
    self.assertEqual(manifest["precision"], "fp32")
    self.assertIn("sgd", manifest["optimizer"])
    self.assertEqual(manifest["seeds"]["model_init"], "37")  # uint64: a string
    self.assertEqual(len(manifest["config_fingerprint"]), 40)
    self.assertTrue(manifest["model_revision"]["revision"].startswith("cnn("))
    self.assertEqual(len(manifest["accepted_examples_per_update"]),
                     manifest["updates"])
    self.assertEqual(sum(manifest["accepted_examples_per_update"]),
                     2 * manifest["data"]["train_examples"])


class TwoStepFlowTest(unittest.TestCase):
  """docs/data.md's flow, the one-worker reference first, then two workers
  into the same folder, with a config that accumulates: a one-worker run of
  the config itself (accumulation 2) is not its reference, and the error
  gives the command that makes one; that command's reference is then
  reused by the two-worker run."""

  def test_the_refusal_gives_the_command_whose_reference_the_run_then_uses(self):
    tmp = support.temp_dir("two_step")
    config = support.write(os.path.join(tmp, "acc.pbtxt"), support.small_config(
        world=2, batch=4, epochs=1, extra="accumulation_steps: 2"))
    out = os.path.join(tmp, "out")
    first = support.run_train("--config=" + config, "--out=" + out, "--set", "world_size=1")
    self.assertEqual(first.returncode, 0, first.stderr[-2000:])
    refused = support.run_train("--config=" + config, "--out=" + out)
    self.assertEqual(refused.returncode, 2, refused.stderr[-2000:])
    self.assertIn("deleted: accumulation_steps: 2", refused.stderr)
    self.assertIn("train it there with `train --config=<this config> --set world_size=1 --set "
                  "accumulation_steps=1 --out=<this --out>`", refused.stderr)
    by_hand = support.run_train("--config=" + config, "--out=" + out, "--set", "world_size=1",
                                "--set", "accumulation_steps=1", "--overwrite")
    self.assertEqual(by_hand.returncode, 0, by_hand.stderr[-2000:])
    made = support.load(os.path.join(out, "reference", "run_manifest.json"))
    two = support.run_train("--config=" + config, "--out=" + out)
    self.assertEqual(two.returncode, 0, two.stderr[-2000:])
    self.assertEqual(support.load(os.path.join(out, "reference", "run_manifest.json"))
                     ["config_fingerprint"], made["config_fingerprint"])
    self.assertTrue(support.load(os.path.join(out, "parity.json"))["pass"])


class CheckpointCostTest(unittest.TestCase):

  def test_two_workers_keep_their_last_generations_and_say_where_saves_went(self):
    # Retention runs in rank 0's background thread: by the end of the run
    # exactly keep_last generations are advertised, the newest ones, and
    # nothing of the older ones is left.
    tmp = support.temp_dir("cost")
    config = support.write(os.path.join(tmp, "c.pbtxt"), support.small_config(
        world=2, epochs=3) + "checkpoint { every_updates: 2 keep_last: 2 }\n")
    out = os.path.join(tmp, "out")
    result = support.run_train("--config=" + config, "--out=" + out,
                               "--whole_run_parity=false")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    cost = support.load(os.path.join(out, "run_summary.json"))["checkpoint"]
    saved = cost["generations_saved"]
    self.assertGreaterEqual(saved, 4)
    folders = sorted(os.listdir(os.path.join(out, "checkpoints")))
    self.assertEqual(folders, ["gen-%06d" % g for g in (saved - 1, saved)])
    for folder in folders:
      self.assertTrue(os.path.exists(os.path.join(out, "checkpoints", folder, "MANIFEST")))
    phases = ("serialize", "folder", "shard", "confirmations", "verify", "manifest",
              "prune", "advertise")
    self.assertEqual(len(cost["save_phases"]), saved)
    for save, seconds in zip(cost["save_phases"], cost["save_seconds"]):
      self.assertTrue(all(save[p] >= 0 for p in phases), save)
      self.assertGreater(save["shard"], 0, save)
      self.assertGreater(save["manifest"], 0, save)
      # The phases are parts of the save, which took at least as long.
      self.assertLessEqual(sum(save[p] for p in phases), seconds * 1.0001 + 1e-6)
    self.assertEqual(set(cost["save_phases_median"]), set(phases))


class LargeSamplerAuditTest(unittest.TestCase):

  def test_a_large_run_streams_its_audit_to_a_side_file_with_the_same_summary(self):
    # --audit_slots_file_above=10 makes a small run's audit large: the slots
    # go to sampler_audit.slots, the JSON keeps the summary, and that
    # summary is the whole audit's without its per-slot lists.
    tmp = support.temp_dir("large_audit")
    config = support.write(os.path.join(tmp, "c.pbtxt"), support.small_config(
        world=3, batch=3, epochs=2, sampler="duplicate_pad", ids=47, val=0.0))
    outs = {}
    for name, flags in (("whole", []), ("large", ["--audit_slots_file_above=10"])):
      outs[name] = os.path.join(tmp, name)
      result = support.run_train("--config=" + config, "--out=" + outs[name],
                                 "--whole_run_parity=false", *flags)
      self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    whole = support.load(os.path.join(outs["whole"], "sampler_audit.json"))
    large = support.load(os.path.join(outs["large"], "sampler_audit.json"))
    self.assertEqual(whole["slots_file"], "")
    self.assertFalse(os.path.exists(os.path.join(outs["whole"], "sampler_audit.slots")))
    self.assertEqual(large["slots_file"], "sampler_audit.slots")
    with open(os.path.join(outs["large"], "sampler_audit.slots"), "rb") as f:
      raw = f.read()
    self.assertEqual(raw[:8], b"RPSLOTS1")
    self.assertEqual(large["slots_file_bytes"], len(raw))
    self.assertEqual(large["slots_file_checksum"], "crc32:%08x" % zlib.crc32(raw))
    # duplicate_pad repeats a receipt (47 on 3 ranks): the summary names it
    # by its receipt id.
    duplicated = [d for e in large["epochs"] for d in e["duplicated_ids"]]
    self.assertTrue(duplicated)
    self.assertTrue(all(d["receipt_id"].startswith("rcpt-") for d in duplicated), duplicated)
    for epoch in whole["epochs"]:
      epoch["updates"] = []
      for rank in epoch["ranks"]:
        for key in ("indices", "receipt_ids", "valid", "micro_batch"):
          rank[key] = []
    for key in ("slots_file", "slots_file_bytes", "slots_file_checksum"):
      del whole[key], large[key]
    self.assertEqual(large, whole)

  def test_a_later_attempt_with_a_whole_audit_removes_the_earlier_side_file(self):
    tmp = support.temp_dir("stale_audit")
    text = support.small_config(world=2, epochs=2, extra="checkpoint { every_updates: 2 }")
    limited = lambda name, updates: support.write_config(tmp, name, text.replace(
        "log_every_updates: 1000", "log_every_updates: 1000 max_updates: %d" % updates))
    out = os.path.join(tmp, "out")
    first = support.train(limited("part", 4), out, "--whole_run_parity=false",
                          "--audit_slots_file_above=10")
    self.assertEqual(first.returncode, 0, first.stderr[-2000:])
    side = os.path.join(out, "sampler_audit.slots")
    self.assertTrue(os.path.exists(side))
    second = support.train(limited("whole", 20), out, "--whole_run_parity=false")
    self.assertEqual(second.returncode, 0, second.stderr[-2000:])
    self.assertFalse(os.path.exists(side))
    self.assertEqual(support.load(os.path.join(out, "sampler_audit.json"))["slots_file"], "")


class SharedLibraryPluginTest(unittest.TestCase):

  def test_a_diverging_run_stops_before_advertising_non_finite_state(self):
    # A learning rate that passes the load-time checks (finite, positive)
    # but throws the parameters past the float range within a few updates.
    tmp = support.temp_dir("diverge")
    text = support.small_config(ids=40, epochs=3).replace(
        "learning_rate: 0.05", "learning_rate: 1e38") + (
        "checkpoint { every_updates: 1 keep_last: 100 }\n")
    config = support.write(os.path.join(tmp, "d.pbtxt"), text)
    out = os.path.join(tmp, "out")
    result = support.run_train("--config=" + config, "--out=" + out)
    self.assertEqual(result.returncode, 1, result.stderr[-2000:])
    match = re.search(r"rank 0, update (\d+): .* is not finite", result.stderr)
    self.assertIsNotNone(match, result.stderr[-2000:])
    failed_update = int(match.group(1))
    # Every advertised generation holds a state from before the failed
    # update (update-indices are 0-based: `failed_update` updates were done).
    advertised = [int(support.load(m)["update"])
                  for m in glob.glob(os.path.join(out, "reference", "checkpoints", "gen-*",
                                                  "MANIFEST"))]
    self.assertTrue(advertised, "nothing was saved before the failure")
    self.assertTrue(all(u <= failed_update for u in advertised),
                    (failed_update, sorted(advertised)))
    self.assertFalse(os.path.exists(os.path.join(out, "reference", "run_summary.json")))



def run_in(cwd, *args):
  """The train binary started in `cwd`, as a user in that folder would."""
  return subprocess.run([support.TRAIN, *args], capture_output=True, text=True,
                        cwd=cwd, timeout=240)


def line_and_column(text, needle):
  for number, line in enumerate(text.split("\n"), 1):
    if needle in line:
      return number, line.index(needle) + 1
  raise AssertionError(needle)


class ListPluginsTest(unittest.TestCase):

  def test_a_library_that_does_not_load_is_named_with_its_line(self):
    tmp = support.temp_dir("list_bad")
    text = support.small_config() + 'plugin_library: "nope.so"\n'
    config = support.write(os.path.join(tmp, "c.pbtxt"), text)
    line, column = line_and_column(text, "plugin_library")
    result = support.run_train("--list_plugins", "--config=" + config)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("%s:%d:%d: plugin_library: plugin library %s: no such file"
                  % (config, line, column,
                     os.path.join(os.path.realpath(tmp), "nope.so")), result.stderr)


class PluginLibraryRecordTest(unittest.TestCase):

  def test_a_config_without_plugin_libraries_records_none(self):
    tmp = support.temp_dir("no_libs")
    config = support.write(os.path.join(tmp, "c.pbtxt"), support.small_config())
    out = os.path.join(tmp, "out")
    result = support.run_train("--config=" + config, "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr)
    manifest = support.load(os.path.join(out, "reference", "run_manifest.json"))
    self.assertEqual(manifest["plugin_libraries"], [])


def png(width, height, rows, colour=False):
  """An 8-bit PNG, gray (colour type 0) or RGB (2): `rows` of samples."""
  raw = b"".join(b"\x00" + bytes(row) for row in rows)

  def chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))

  header = struct.pack(">IIBBBBB", width, height, 8, 2 if colour else 0, 0, 0, 0)
  return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
          chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def receipt_image(name, seed, size=16):
  """The bytes of a size x size image in the format `name` ends with:
  .pgm (binary P5), .ascii.pgm (P2), .png (gray) or .rgb.png."""
  samples = [[(x * 7 + y * 13 + seed * 29) % 256 for x in range(size)]
             for y in range(size)]
  header = ("%d %d\n255\n" % (size, size)).encode()
  if name.endswith(".ascii.pgm"):
    return b"P2\n" + header + " ".join(str(v) for row in samples for v in row).encode()
  if name.endswith(".pgm"):
    return b"P5\n" + header + bytes(v for row in samples for v in row)
  if name.endswith(".rgb.png"):
    return png(size, size, [[v for v in row for _ in range(3)] for row in samples],
               colour=True)
  return png(size, size, samples)


# What docs/data.md's "Bring your own data" shows: 12 receipts, 3 of each
# label; r00 and r05 photographed twice (repeated ids: several captures of
# one receipt); PGM and PNG variants side by side.
OWN_DATA_ROWS = [
    ("r%02d" % i, "images/r%02d%s" % (i, (".pgm", ".ascii.pgm", ".png", ".rgb.png")[i % 4]),
     ("ok", "blurred", "faded", "cropped")[i % 4]) for i in range(12)
] + [("r00", "images/r00-again.png", "ok"), ("r05", "images/r05-again.pgm", "blurred")]

OWN_DATA_CONFIG = """
data {
  manifest_path: "receipts.csv"   # relative to this file's folder
  image_size: 16                  # every image is 16x16
  validation_fraction: 0.25
  views_per_identity: 2
}
model { architecture: "cnn" conv_channels: [4] hidden_units: [8] }
optimizer { sgd { learning_rate: 0.05 momentum: 0.9 } }
global_batch: 4
"""


def write_own_data(folder, rows=OWN_DATA_ROWS, config=OWN_DATA_CONFIG, sizes=None):
  """A data folder as docs/data.md lays it out: config, manifest, images/
  (16x16 each, or as `sizes` says by image path)."""
  os.makedirs(os.path.join(folder, "images"), exist_ok=True)
  lines = ["receipt_id,image,label"]
  for seed, (receipt, image, label) in enumerate(rows):
    with open(os.path.join(folder, image), "wb") as f:
      f.write(receipt_image(image, seed, (sizes or {}).get(image, 16)))
    lines.append("%s,%s,%s" % (receipt, image, label))
  support.write(os.path.join(folder, "receipts.csv"), "\n".join(lines) + "\n")
  return support.write(os.path.join(folder, "config.pbtxt"), config)


class ExitCodeTest(unittest.TestCase):
  """Issue 26, item 4: one exit code per cause, whichever process finds it."""

  def test_the_readme_sequence_with_a_bad_row_found_by_the_workers_exits_2(self):
    tmp = os.path.realpath(support.temp_dir("exit_codes"))
    folder = os.path.join(tmp, "mydata")
    one = write_own_data(folder)
    two = support.write(os.path.join(folder, "two.pbtxt"), OWN_DATA_CONFIG + "world_size: 2\n")
    out = os.path.join(tmp, "out")
    # The reference first, on good data.
    result = support.run_train("--config=" + one, "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    # The CSV gains a bad row; the two workers (not the launcher, which
    # reuses the reference) find it.
    with open(os.path.join(folder, "receipts.csv"), "a") as f:
      f.write("r99,images/r00.pgm,smudged\n")
    result = support.run_train("--config=" + two, "--out=" + out)
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn("receipts.csv:16", result.stderr)
    self.assertIn("smudged", result.stderr)
    # The same on a fresh folder: 2 as well.
    result = support.run_train("--config=" + two, "--out=" + os.path.join(tmp, "fresh"))
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])


class ConfigPathsTest(unittest.TestCase):
  """Issue 15, item 2: every path in a config resolves against its folder."""

  def setUp(self):
    self.tmp = os.path.realpath(support.temp_dir("paths"))
    write_own_data(os.path.join(self.tmp, "mydata"))
    # The working directory has a manifest of the same name that is not
    # the config's (it has no rows).
    self.cwd = os.path.join(self.tmp, "cwd")
    os.makedirs(self.cwd)
    support.write(os.path.join(self.cwd, "receipts.csv"), "receipt_id,image,label\n")

  def test_a_relative_manifest_path_is_the_one_beside_the_config(self):
    result = run_in(self.cwd, "--config=../mydata/config.pbtxt", "--validate_only")
    self.assertEqual(result.returncode, 0, result.stderr)
    result = run_in(self.cwd, "--config=../mydata/config.pbtxt", "--out=out")
    self.assertEqual(result.returncode, 0, result.stderr)
    # --out (and run.output_dir) stay relative to the working directory.
    manifest = support.load(os.path.join(self.cwd, "out", "reference", "run_manifest.json"))
    self.assertEqual(manifest["data"]["source"],
                     os.path.join(self.tmp, "mydata", "receipts.csv"))

  def test_a_missing_manifest_names_the_config_line_and_the_resolved_path(self):
    os.remove(os.path.join(self.tmp, "mydata", "receipts.csv"))
    line, column = line_and_column(OWN_DATA_CONFIG, "manifest_path")
    for flags in (["--validate_only"], ["--out=out"]):
      result = run_in(self.cwd, "--config=../mydata/config.pbtxt", *flags)
      self.assertEqual(result.returncode, 2, result.stderr)
      self.assertIn(
          "../mydata/config.pbtxt:%d:%d: data.manifest_path: cannot read receipt "
          "manifest: %s: no such file"
          % (line, column, os.path.join(self.tmp, "mydata", "receipts.csv")),
          result.stderr)
    self.assertFalse(os.path.exists(os.path.join(self.cwd, "out", "reference",
                                                 "run_manifest.json")))


class OwnDataTest(unittest.TestCase):
  """docs/data.md's "Bring your own data", followed to a trained reference."""

  def test_the_readme_layout_trains_with_every_image_variant_and_repeated_ids(self):
    tmp = support.temp_dir("own")
    config = write_own_data(os.path.join(tmp, "mydata"))
    out = os.path.join(tmp, "out")
    result = support.run_train("--config=" + config, "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr)
    manifest = support.load(os.path.join(out, "reference", "run_manifest.json"))
    self.assertEqual(manifest["label_map"], ["ok", "blurred", "faded", "cropped"])
    data = manifest["data"]
    self.assertEqual(data["image_size"], 16)
    # 12 receipts, split by receipt (one of each label held out); a
    # training receipt gets max(captures, views_per_identity) views.
    self.assertEqual(data["train_identities"] + data["validation_identities"], 12)
    self.assertEqual(data["validation_identities"], 4)
    self.assertEqual(data["train_examples"], 2 * data["train_identities"])
    self.assertEqual(sum(data["train_class_counts"]), data["train_examples"])
    validation = support.load(os.path.join(out, "reference", "validation.json"))
    self.assertEqual(validation["unique_ids_counted"], 4)

  def check_refused(self, rows, *expected, sizes=None):
    tmp = support.temp_dir("own_bad")
    config = write_own_data(os.path.join(tmp, "mydata"), rows=rows, sizes=sizes)
    result = support.run_train("--config=" + config, "--validate_only")
    self.assertEqual(result.returncode, 2, result.stderr)
    for text in expected:
      self.assertIn(text, result.stderr)
    return result

  def test_an_image_of_another_size_is_refused_with_the_manifest_line(self):
    rows = OWN_DATA_ROWS + [("r99", "images/big.png", "ok")]
    line, column = line_and_column(OWN_DATA_CONFIG, "manifest_path")
    self.check_refused(
        rows, "config.pbtxt:%d:%d: data.manifest_path: " % (line, column),
        "receipts.csv:%d: image " % (len(rows) + 1),
        "is 24x24, expected 16x16 (data.image_size)", sizes={"images/big.png": 24})

  def test_an_unknown_label_lists_the_label_map(self):
    self.check_refused(OWN_DATA_ROWS + [("r99", "images/x.png", "smudged")],
                       'unknown label "smudged"; valid labels: ok, blurred, faded, cropped')

  def test_one_receipt_with_two_labels_is_refused(self):
    self.check_refused(OWN_DATA_ROWS + [("r00", "images/r00-third.png", "faded")],
                       'conflicting labels for receipt_id "r00"')


if __name__ == "__main__":
  unittest.main()
