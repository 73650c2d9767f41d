#!/usr/bin/python3
"""Pixels rendered on demand (train --render_pixels_above, issue 29) on real
two-worker runs: the run trains the same model, writes the same validation
and audit, and keeps the same data hash as the run that holds every pixel,
so a run folder saved one way resumes the other way; bad flag values exit 2.

Argument: the train binary."""
import os
import unittest

import integration_support as support

CONFIG = support.small_config(world=2, views=2, epochs=2,
                              extra="checkpoint { every_updates: 3 keep_last: 2 }")
ON_DEMAND = ("--render_pixels_above=0",)


def artifacts(out):
  return {name: support.load(os.path.join(out, name))
          for name in ("run_manifest.json", "run_summary.json", "validation.json",
                       "sampler_audit.json", "parity.json")}


class RenderedPixelsTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = support.temp_dir("rendered_pixels")
    cls.config = support.write_config(cls.tmp, "c", CONFIG)
    cls.outs = {}
    for name, flags in (("held", ()), ("rendered", ON_DEMAND),
                        ("uncached", ON_DEMAND + ("--pixel_cache_mib=0",))):
      cls.outs[name] = os.path.join(cls.tmp, name)
      result = support.train(cls.config, cls.outs[name], *flags)
      assert result.returncode == 0, (name, result.stderr[-3000:])

  def test_the_manifest_says_how_the_pixels_were_held(self):
    data = {name: artifacts(out)["run_manifest.json"]["data"] for name, out in self.outs.items()}
    self.assertEqual(data["held"]["pixels"], "in_memory")
    self.assertEqual(int(data["held"]["pixel_cache_bytes"]), 0)
    self.assertEqual(data["rendered"]["pixels"], "rendered_on_demand")
    self.assertEqual(int(data["rendered"]["pixel_cache_bytes"]), 64 << 20)
    self.assertEqual(data["uncached"]["pixels"], "rendered_on_demand")
    self.assertEqual(int(data["uncached"]["pixel_cache_bytes"]), 0)

  def test_rendered_pixels_train_the_same_model_bitwise(self):
    held = artifacts(self.outs["held"])
    for name in ("rendered", "uncached"):
      got = artifacts(self.outs[name])
      self.assertEqual(got["run_summary.json"]["final_parameter_hash"],
                       held["run_summary.json"]["final_parameter_hash"], name)
      for artifact in ("validation.json", "sampler_audit.json"):
        self.assertEqual(got[artifact], held[artifact], (name, artifact))
      self.assertTrue(got["parity.json"]["pass"], name)

  def test_a_folder_saved_holding_pixels_resumes_rendering_them(self):
    # The checkpoints keep the data hash: it is the same either way, so a
    # run stopped while holding its pixels resumes rendering them, and ends
    # where the whole run ends.
    limited = support.write_config(self.tmp, "part", CONFIG.replace(
        "log_every_updates: 1000", "log_every_updates: 1000 max_updates: 6"))
    out = os.path.join(self.tmp, "resumed")
    first = support.train(limited, out, "--whole_run_parity=false")
    self.assertEqual(first.returncode, 0, first.stderr[-2000:])
    second = support.train(self.config, out, *ON_DEMAND)
    self.assertEqual(second.returncode, 0, second.stderr[-2000:])
    self.assertIn("resum", second.stderr)
    self.assertEqual(artifacts(out)["run_summary.json"]["final_parameter_hash"],
                     artifacts(self.outs["held"])["run_summary.json"]["final_parameter_hash"])

  def test_data_that_does_not_fit_is_refused_before_any_pixel_is_made(self):
    # 8 views of 200 000 identities of 512 x 512 would take terabytes:
    # refused with the config, naming its line and the figures; nothing
    # written.
    huge = support.write_config(self.tmp, "huge", support.small_config(
        ids=200000, views=8, world=2).replace("image_size: 16", "image_size: 512"))
    out = os.path.join(self.tmp, "huge_out")
    result = support.train(huge, out)
    self.assertEqual(result.returncode, 2, result.stderr[-2000:])
    self.assertIn("huge.pbtxt:", result.stderr)
    self.assertIn("data.synthetic.num_identities: 200000 identities x 8 views of 512x512 float "
                  "pixels (plus an int64 label each) need 1677734400000 bytes", result.stderr)
    self.assertFalse(os.path.exists(os.path.join(out, "run_manifest.json")))

  def test_a_manifest_whose_pixels_do_not_fit_is_refused_before_reading_an_image(self):
    # 12 rows of 512 x 512, each training row made into 1000 views, held
    # three times over: about 38 GB, more than this machine has. The rows
    # are counted first: the images they name do not exist.
    folder = os.path.join(self.tmp, "big_manifest")
    os.makedirs(folder, exist_ok=True)
    support.write(os.path.join(folder, "receipts.csv"), "receipt_id,image,label\n" + "".join(
        f"r{i},images/r{i}.png,ok\n" for i in range(12)))
    config = support.write_config(folder, "c", support.small_config(views=1000).replace(
        "synthetic { num_identities: 40 rare_class_fraction: 0.05 seed: 3 }",
        'manifest_path: "receipts.csv"').replace("image_size: 16", "image_size: 512"))
    result = support.train(config, os.path.join(folder, "out"))
    self.assertEqual(result.returncode, 2, result.stderr[-2000:])
    self.assertIn("c.pbtxt:", result.stderr)
    self.assertIn("receipts.csv: 12 rows, more than the ", result.stderr)
    self.assertIn("whose pixels fit in memory (about 3.1 GB held per row at views_per_identity "
                  "1000", result.stderr)
    self.assertNotIn("r0.png", result.stderr)
    self.assertFalse(os.path.exists(os.path.join(folder, "out", "run_manifest.json")))

  def test_bad_flag_values_exit_2_naming_the_flag(self):
    out = os.path.join(self.tmp, "bad")
    for flag, named in (("--render_pixels_above=-1", "--render_pixels_above"),
                        ("--pixel_cache_mib=-5", "--pixel_cache_mib")):
      result = support.train(self.config, out, flag)
      self.assertEqual(result.returncode, 2, result.stderr[-2000:])
      self.assertIn(named, result.stderr)
      self.assertFalse(os.path.exists(os.path.join(out, "run_manifest.json")))


if __name__ == "__main__":
  unittest.main()
