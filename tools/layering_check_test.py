#!/usr/bin/python3
"""tools/layering_check.py on small graphs and source trees made here: it
finds an upward dependency, an upward include, a cycle on one floor and a
package on no floor, exempts aliases and other repositories' headers, finds
a document naming an alias target, a target visible below its floor, a
stale tools/floors.bzl and a function over 80 lines, and passes a clean
graph. (./test.sh runs it on the real graph.)"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

CHECK = os.path.abspath(sys.argv.pop(1))

LAYERS = """\
# a comment
0 low: io
1 mid: data model
2 high: trainer
"""


def rule(name, kind="cc_library", inputs=(), visibility=()):
  lines = ['<rule class="%s" location="x" name="%s">' % (kind, name)]
  if visibility:
    lines += ['<list name="visibility">'] + [
        '<label value="%s"/>' % v for v in visibility] + ["</list>"]
  lines += ['<rule-input name="%s"/>' % i for i in inputs]
  return "\n".join(lines + ["</rule>"])


def query(*rules):
  return '<?xml version="1.1"?>\n<query version="2">\n%s\n</query>\n' % "\n".join(rules)


class LayeringCheckTest(unittest.TestCase):

  def run_check(self, graph, sources=None):
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    layers = os.path.join(tmp, "layers.txt")
    with open(layers, "w") as f:
      f.write(LAYERS)
    xml = os.path.join(tmp, "q.xml")
    with open(xml, "w") as f:
      f.write(graph)
    args = [sys.executable, CHECK, layers, xml]
    if sources is not None:
      root = os.path.join(tmp, "src")
      for path, text in sources.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
          f.write(textwrap.dedent(text))
      args.append(root)
    return subprocess.run(args, capture_output=True, text=True)

  def test_a_clean_graph_passes(self):
    result = self.run_check(query(
        rule("//io:file"),
        rule("//data:reader", inputs=["//io:file", "//data:reader.cc", "@system//:absl"]),
        rule("//model:net", inputs=["//data:reader"]),
        rule("//trainer:train", "cc_binary", ["//model:net", "//io:file"])))
    self.assertEqual(result.returncode, 0, result.stdout)
    self.assertIn("none upward", result.stdout)

  def test_an_upward_dependency_is_named(self):
    result = self.run_check(query(
        rule("//io:file", inputs=["//data:reader"]),
        rule("//data:reader")))
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("//io:file (floor 0 low) depends on //data:reader (floor 1 mid)",
                  result.stdout)

  def test_an_alias_keeping_an_old_name_is_exempt(self):
    result = self.run_check(query(
        rule("//io:old_name", "alias", ["//trainer:train"]),
        rule("//trainer:train", "cc_binary")))
    self.assertEqual(result.returncode, 0, result.stdout)

  def test_a_cycle_on_one_floor_is_named(self):
    result = self.run_check(query(
        rule("//data:a", inputs=["//model:b"]),
        rule("//model:b", inputs=["//data:c"]),
        rule("//data:c")))
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("cycle: data -> model", result.stdout)

  def test_a_package_on_no_floor_is_named(self):
    result = self.run_check(query(rule("//newpkg:x")))
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("package newpkg is on no floor", result.stdout)

  def test_an_upward_include_is_named_and_other_repositories_are_not(self):
    graph = query(rule("//io:file"), rule("//data:reader"), rule("//trainer:train"))
    sources = {
        "io/file.h": '#include "data/reader.h"\n#include "tools/cpp/runfiles/runfiles.h"\n',
        "data/reader.h": '#include "io/file.h"\n',
        "data/reader.proto": 'import "io/records.proto";\n',
        "io/records.proto": "",
        "trainer/train.cc": '#include "data/reader.pb.h"\n',
    }
    result = self.run_check(graph, sources)
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("io/file.h (floor 0 low) includes data/reader.h (floor 1 mid)",
                  result.stdout)
    self.assertEqual(result.stdout.count(" includes "), 1, result.stdout)

  def test_a_document_naming_an_alias_is_named_unless_it_says_it_is_one(self):
    graph = query(rule("//io:file"), rule("//trainer:train", "cc_binary", ["//io:file"]),
                  rule("//trainer:old", "alias", ["//trainer:train"]))
    sources = {
        "README.md": "Run `bazel run //trainer:old`.\n\nOr //trainer:train.\n",
        "docs/running.md": "The old name //trainer:old is an alias of //trainer:train.\n",
        "run.sh": "bazel run //trainer:train\n",
    }
    result = self.run_check(graph, sources)
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("README.md: names the alias //trainer:old; name its target", result.stdout)
    self.assertNotIn("docs/running.md", result.stdout)
    sources["README.md"] = "Run `bazel run //trainer:train`.\n"
    self.assertEqual(self.run_check(graph, sources).returncode, 0)

  def test_a_package_the_architecture_page_does_not_name_is_named(self):
    graph = query(rule("//io:file"), rule("//trainer:train", "cc_binary", ["//io:file"]))
    sources = {"docs/architecture.md": "`io/`, `data/`, `model/`: the floors.\n"}
    result = self.run_check(graph, sources)
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("docs/architecture.md does not name the package trainer", result.stdout)
    self.assertNotIn("package io", result.stdout)

  def test_a_target_visible_below_its_floor_is_named(self):
    result = self.run_check(query(
        rule("//io:file", visibility=["//visibility:public"]),
        rule("//data:reader", visibility=["//io:__pkg__", "//trainer:__pkg__"]),
        rule("//model:net", visibility=["//visibility:public"]),
        rule("//model:tool", "cc_binary", visibility=["//visibility:public"])))
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("//data:reader (floor 1 mid) is visible to //io:__pkg__ (floor 0 low), "
                  "a lower floor", result.stdout)
    self.assertIn("//model:net (floor 1 mid) is //visibility:public", result.stdout)
    self.assertNotIn("//io:file", result.stdout)  # floor 0: everyone may use it
    self.assertNotIn("//model:tool", result.stdout)  # a program
    self.assertNotIn("//trainer:__pkg__", result.stdout)

  def test_a_package_public_by_default_is_named(self):
    graph = query(rule("//io:file"), rule("//data:reader"))
    private = 'package(default_visibility = ["//visibility:private"])\n'
    sources = {"io/BUILD": private,
               "data/BUILD": 'package(default_visibility = ["//visibility:public"])\n'}
    result = self.run_check(graph, sources)
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("data/BUILD does not declare package(default_visibility", result.stdout)
    self.assertNotIn("io/BUILD", result.stdout)
    sources["data/BUILD"] = private
    self.assertEqual(self.run_check(graph, sources).returncode, 0)

  def test_floors_bzl_is_the_layers_file_or_named_stale(self):
    graph = query(rule("//io:file"))
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    layers = os.path.join(tmp, "layers.txt")
    with open(layers, "w") as f:
      f.write(LAYERS)
    bzl = os.path.join(tmp, "floors.bzl")
    written = subprocess.run([sys.executable, CHECK, "--write_floors", layers, bzl])
    self.assertEqual(written.returncode, 0)
    with open(bzl) as f:
      text = f.read()
    self.assertIn('"data": 1,', text)
    self.assertIn('"trainer": 2,', text)
    self.assertEqual(self.run_check(graph, {"tools/floors.bzl": text}).returncode, 0)
    stale = self.run_check(graph, {"tools/floors.bzl": text.replace('"data": 1', '"data": 0')})
    self.assertEqual(stale.returncode, 1, stale.stdout)
    self.assertIn("tools/floors.bzl is out of date", stale.stdout)

  def test_a_function_over_80_lines_is_named(self):
    graph = query(rule("//io:file"))
    body = "".join("  x += %d;\n" % i for i in range(78))
    short = "int Short(int x) {\n%s  return x;\n}\n" % body  # 81 lines
    long = "int Long(\n    int x) {\n%s  return x;\n}\n" % body  # 82 lines
    result = self.run_check(graph, {"io/file.cc": short.replace("Short", "Fits", 1)
                                    .replace("  x += 77;\n", "", 1) + long})
    self.assertEqual(result.returncode, 1, result.stdout)
    self.assertIn("io/file.cc:", result.stdout)
    self.assertIn("Long is 82 lines (at most 80)", result.stdout)
    self.assertNotIn("Fits", result.stdout)


if __name__ == "__main__":
  unittest.main()
