#!/usr/bin/python3
"""A team's shared-library plugins (this folder's examples) through the
real train binary: a library named by the config is loaded and its plugin
selected, a relative library is the one beside the config, --list_plugins
marks a library's plugins, options of a library's type are refused without
it, and the walk-throughs of docs/plugins.md ("Add a reducer as a .so",
"Add a model as a .so", "Add an optimizer or a schedule as a .so") train
two workers with parity, the reducer's also through the old names under
plugins/examples/, the recipe's resuming bitwise."""
import math
import hashlib
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"], "trainer", "integration"))
import integration_support as support  # pylint: disable=wrong-import-position

EXPECTED_PLUGINS = sys.argv.pop(1).split(",")
PLUGIN_SO = os.path.abspath(sys.argv.pop(1))
REDUCER_SO = os.path.abspath(sys.argv.pop(1))
REDUCER_CONFIG = os.path.abspath(sys.argv.pop(1))
# The same through the old names under plugins/examples/ (an alias and a
# link to the moved config).
OLD_NAME_REDUCER_SO = os.path.abspath(sys.argv.pop(1))
OLD_NAME_REDUCER_CONFIG = os.path.abspath(sys.argv.pop(1))
MODEL_SO = os.path.abspath(sys.argv.pop(1))
MODEL_CONFIG = os.path.abspath(sys.argv.pop(1))
OPTIMIZER_SO = os.path.abspath(sys.argv.pop(1))
SCHEDULE_SO = os.path.abspath(sys.argv.pop(1))
RECIPE_CONFIG = os.path.abspath(sys.argv.pop(1))


def run_in(cwd, *args):
  """The train binary started in `cwd`, as a user in that folder would."""
  return subprocess.run([support.TRAIN, *args], capture_output=True, text=True,
                        cwd=cwd, timeout=240)


class SharedLibraryPluginTest(unittest.TestCase):

  def test_options_of_a_librarys_type_name_the_libraries_loaded(self):
    selection = ('metric_dedup { name: "by_receipt_id" options { '
                 '[type.googleapis.com/receipt_parity.MySumOptions] { } } }')
    text = ('plugin_library: "%s"\n' % PLUGIN_SO) + support.small_config().replace(
        'metric_dedup { name: "by_receipt_id" }', selection)
    tmp = support.temp_dir("bad")
    config = support.write(os.path.join(tmp, "bad.pbtxt"), text)
    out = os.path.join(tmp, "out")
    result = support.run_train("--config=" + config, "--out=" + out)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("plugin libraries loaded (%s)" % PLUGIN_SO, result.stderr)
    self.assertFalse(os.path.exists(out), "nothing may be written")

  def test_a_relative_plugin_library_is_the_one_beside_the_config(self):
    # The working directory has a file of the same relative path that is not
    # a library; the config's folder has the real one.
    tmp = support.temp_dir("relative_so")
    config_dir = os.path.join(tmp, "mydata")
    os.makedirs(os.path.join(config_dir, "plugins"))
    shutil.copy(PLUGIN_SO, os.path.join(config_dir, "plugins", "libx.so"))
    cwd = os.path.join(tmp, "cwd")
    os.makedirs(os.path.join(cwd, "plugins"))
    with open(os.path.join(cwd, "plugins", "libx.so"), "w") as f:
      f.write("not a library\n")
    text = 'plugin_library: "plugins/libx.so"\n' + support.small_config(
        world=1, dedup="keep_first_seen")
    config = support.write(os.path.join(config_dir, "c.pbtxt"), text)
    result = subprocess.run([support.TRAIN, "--config=" + config, "--validate_only"],
                            capture_output=True, text=True, cwd=cwd, timeout=120)
    self.assertEqual(result.returncode, 0, result.stderr)
    # And a relative path that exists only in the working directory is not
    # found there.
    os.remove(os.path.join(config_dir, "plugins", "libx.so"))
    shutil.copy(PLUGIN_SO, os.path.join(cwd, "plugins", "libx.so"))
    result = subprocess.run([support.TRAIN, "--config=" + config, "--validate_only"],
                            capture_output=True, text=True, cwd=cwd, timeout=120)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn(os.path.join(config_dir, "plugins", "libx.so"), result.stderr)

  def test_plugin_library_is_loaded_and_selected_through_the_config(self):
    tmp = support.temp_dir("so")
    text = ('plugin_library: "%s"\n' % PLUGIN_SO) + support.small_config(
        world=1, dedup="keep_first_seen").replace(
            'metric_dedup { name: "keep_first_seen" }',
            'metric_dedup { name: "keep_first_seen" options { '
            '[type.googleapis.com/receipt_parity.KeepFirstSeenOptions] '
            '{ max_disagreeing_ids: 3 } } }')
    config = support.write(os.path.join(tmp, "so.pbtxt"), text)
    out = os.path.join(tmp, "out")
    result = support.run_train("--config=" + config, "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr)
    validation = support.load(os.path.join(out, "reference", "validation.json"))
    self.assertEqual(validation["dedup"], "keep_first_seen")
    manifest = support.load(os.path.join(out, "reference", "run_manifest.json"))
    self.assertEqual(manifest["plugins"]["metric_dedup"], "keep_first_seen")


class ListPluginsTest(unittest.TestCase):

  def test_a_configs_libraries_are_listed_and_marked_with_their_file(self):
    tmp = support.temp_dir("list")
    os.makedirs(os.path.join(tmp, "libs"))
    shutil.copy(REDUCER_SO, os.path.join(tmp, "libs", "libmy_sum_reducer.so"))
    # The reducer's name is wrong: the listing is what helps then.
    text = ('plugin_library: "libs/libmy_sum_reducer.so"\n' +
            support.small_config(reducer="my_summ"))
    config = support.write(os.path.join(tmp, "c.pbtxt"), text)
    result = support.run_train("--list_plugins", "--config=" + config)
    self.assertEqual(result.returncode, 0, result.stderr)
    lines = result.stdout.splitlines()
    library = os.path.join(os.path.realpath(tmp), "libs", "libmy_sum_reducer.so")
    self.assertIn("reducer/my_sum  (from %s)" % library, lines)
    # The built-in plugins are listed as without a config, unmarked.
    self.assertEqual(sorted(l for l in lines if "(from" not in l),
                     sorted(EXPECTED_PLUGINS))
    self.assertEqual(len(lines), len(EXPECTED_PLUGINS) + 1)


class ReducerExampleTest(unittest.TestCase):
  """The README's "Add a reducer as a .so": the shipped example config,
  verbatim, beside the library where its relative path says."""

  def test_the_example_trains_two_workers_through_my_sum_with_parity(self):
    tmp, config, library = support.example_tree("my_sum", REDUCER_CONFIG, REDUCER_SO)
    out = os.path.join(tmp, "out")
    result = run_in(tmp, "--config=examples/plugins/my_sum_two_worker.pbtxt",
                    "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])

    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity.get("failures"))
    self.assertEqual(parity["reducer"], "my_sum")
    summary = support.load(os.path.join(out, "run_summary.json"))
    self.assertEqual(summary["parity"], "pass")
    self.assertEqual({t["rank"] for t in summary["timing"]}, {0, 1})
    for timing in summary["timing"]:
      # my_sum ran: gradients_per_collective 2 over the cnn's 6 gradients.
      self.assertGreaterEqual(timing["collectives"], 3 * summary["updates"], timing)

    with open(library, "rb") as f:
      sha1 = hashlib.sha1(f.read()).hexdigest()
    expected = {"path": "../../bazel-bin/examples/plugins/libmy_sum_reducer.so",
                "resolved_path": library, "sha1": sha1,
                "plugins": ["reducer/my_sum"]}
    for manifest_path in (os.path.join(out, "run_manifest.json"),
                          os.path.join(out, "reference", "run_manifest.json")):
      manifest = support.load(manifest_path)
      self.assertEqual(manifest["plugins"]["reducer"], "my_sum")
      self.assertEqual(manifest["plugin_libraries"], [expected], manifest_path)

  def test_the_old_example_names_keep_working(self):
    # `bazel build //examples/plugins:libmy_sum_reducer.so` and
    # --config=plugins/examples/my_sum_two_worker.pbtxt, from a workspace.
    self.assertEqual(os.path.basename(OLD_NAME_REDUCER_SO), "libmy_sum_reducer.so")
    tmp = os.path.realpath(support.temp_dir("old_names"))
    config = os.path.join(tmp, "plugins", "examples", "my_sum_two_worker.pbtxt")
    library = os.path.join(tmp, "bazel-bin", "examples", "plugins", "libmy_sum_reducer.so")
    for source, target in ((OLD_NAME_REDUCER_CONFIG, config), (OLD_NAME_REDUCER_SO, library)):
      os.makedirs(os.path.dirname(target), exist_ok=True)
      shutil.copy(source, target)
    result = run_in(tmp, "--list_plugins", "--config=plugins/examples/my_sum_two_worker.pbtxt")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("reducer/my_sum", result.stdout.split())


class ModelExampleTest(unittest.TestCase):
  """The README's "Add a model as a .so": the shipped example config,
  verbatim, beside the library where its relative path says."""

  def test_the_example_model_trains_two_workers_with_parity(self):
    tmp, config, library = support.example_tree("my_model", MODEL_CONFIG, MODEL_SO)
    listed = support.run_train("--list_plugins", "--config=" + config)
    self.assertEqual(listed.returncode, 0, listed.stderr)
    self.assertIn("model/my_model  (from %s)" % library, listed.stdout.split("\n"))
    self.assertIn("model/torchscript", listed.stdout.split("\n"))

    out = os.path.join(tmp, "out")
    result = subprocess.run([support.TRAIN, "--config=" + config, "--out=" + out],
                            capture_output=True, text=True, cwd=tmp, timeout=240)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity.get("failures"))
    self.assertTrue(parity["ranks_agree"])
    self.assertEqual([g["name"] for g in parity["gradients"]],
                     ["hidden.weight", "hidden.bias", "logits.weight", "logits.bias"])
    manifest = support.load(os.path.join(out, "run_manifest.json"))
    self.assertTrue(manifest["model_revision"]["revision"].startswith(
        "my_model(hidden=24;in=1x16x16;classes=4)@"))
    self.assertEqual(manifest["plugin_libraries"][0]["plugins"], ["model/my_model"])


class RecipeExampleTest(unittest.TestCase):
  """docs/plugins.md's "Add an optimizer or a schedule as a .so": a team's
  RMSprop and inverse-square-root schedule, from the shipped config
  verbatim, train two workers with parity, and a run stopped after 3
  updates resumes to the uninterrupted run's parameters, bitwise."""

  @classmethod
  def setUpClass(cls):
    cls.tmp, cls.config, _ = support.example_tree("my_recipe", RECIPE_CONFIG, OPTIMIZER_SO,
                                                  SCHEDULE_SO)

  def config_text(self):
    with open(self.config) as f:
      return f.read()

  def train(self, config, out):
    result = run_in(self.tmp, "--config=" + config, "--out=" + out)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    return support.load(os.path.join(out, "run_summary.json"))

  def test_the_libraries_plugins_are_listed(self):
    listed = support.run_train("--list_plugins", "--config=" + self.config)
    self.assertEqual(listed.returncode, 0, listed.stderr)
    lines = listed.stdout.split("\n")
    so = lambda name: os.path.join(self.tmp, "bazel-bin", "examples", "plugins", name)
    self.assertIn("optimizer/my_rmsprop  (from %s)" % so("libmy_rmsprop_optimizer.so"), lines)
    self.assertIn("lr_schedule/inverse_sqrt  (from %s)" % so("libinverse_sqrt_schedule.so"),
                  lines)

  def test_the_recipe_trains_two_workers_with_parity_and_resumes_bitwise(self):
    out = os.path.join(self.tmp, "whole")
    whole = self.train(self.config, out)
    parity = support.load(os.path.join(out, "parity.json"))
    self.assertTrue(parity["pass"], parity.get("failures"))
    manifest = support.load(os.path.join(out, "run_manifest.json"))
    self.assertEqual(manifest["optimizer"]["name"], "my_rmsprop")
    self.assertEqual(manifest["plugins"]["lr_schedule"], "inverse_sqrt")
    self.assertEqual(sorted(p for l in manifest["plugin_libraries"] for p in l["plugins"]),
                     ["lr_schedule/inverse_sqrt", "optimizer/my_rmsprop"])
    # The schedule's rate at each update: 0.002 * min((u+1)/4, sqrt(4/(u+1))).
    for u, point in enumerate(whole["loss_curve"]):
      self.assertAlmostEqual(point["learning_rate"],
                             0.002 * min((u + 1) / 4, math.sqrt(4 / (u + 1))), places=15)

    # A generation after every update (the shipped config saves every 10).
    text = self.config_text().replace("checkpoint { every_updates: 10 keep_last: 2 }",
                                      "checkpoint { every_updates: 1 }")
    stopped = support.write(os.path.join(os.path.dirname(self.config), "stopped.pbtxt"),
                            text.replace("log_every_updates: 10",
                                         "log_every_updates: 10 max_updates: 3"))
    resumed_config = support.write(os.path.join(os.path.dirname(self.config), "resumed.pbtxt"),
                                   text)
    part = os.path.join(self.tmp, "part")
    self.train(stopped, part)
    resumed = self.train(resumed_config, part)
    self.assertEqual(support.load(os.path.join(part, "resume.json"))["update"], 3)
    self.assertEqual(resumed["final_parameter_hash"], whole["final_parameter_hash"])
    self.assertEqual(resumed["loss_curve"][0]["learning_rate"],
                     whole["loss_curve"][3]["learning_rate"])

  def test_a_librarys_options_are_checked_naming_the_option(self):
    text = self.config_text().replace("warmup_updates: 4", "warmup_updates: 0")
    bad = support.write(os.path.join(os.path.dirname(self.config), "bad.pbtxt"), text)
    result = run_in(self.tmp, "--config=" + bad, "--validate_only")
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("lr_schedule.options: warmup_updates: must be >= 1, got 0", result.stderr)
    text = self.config_text().replace("momentum: 0.9", "momentum: -1")
    bad = support.write(os.path.join(os.path.dirname(self.config), "bad.pbtxt"), text)
    result = run_in(self.tmp, "--config=" + bad, "--validate_only")
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertIn("optimizer.options: momentum: must be finite and >= 0", result.stderr)


if __name__ == "__main__":
  unittest.main()
