#!/usr/bin/env python3
"""Checks the build graph and the sources against the floors of
tools/layers.txt: no package depends on, or includes a file of, a package
on a higher floor, packages on one floor do not depend on each other in a
cycle, and no target is visible to a package below its floor.

usage: layering_check.py LAYERS QUERY_XML [SOURCE_ROOT]
       layering_check.py --write_floors LAYERS FLOORS_BZL
  LAYERS      tools/layers.txt
  QUERY_XML   the output of
              bazel query --noimplicit_deps --output=xml 'kind(rule, //...)'
  SOURCE_ROOT where the packages' sources are: their #include "..." and
              proto import lines are checked too, and no document
              (README.md, run.sh, test.sh, docs/*.md) names an alias
              target outside a paragraph that says it is one, and
              docs/architecture.md names every package, tools/floors.bzl
              is the layers file's, and no function is longer than
              MAX_FUNCTION_LINES (optional)
  --write_floors writes tools/floors.bzl from the layers file
Prints one line per violation and exits 1 when there is any; 0 and a
summary line otherwise. The graph is read with Python's XML parser."""
import os
import re
import sys
import xml.etree.ElementTree as ElementTree

INCLUDE = re.compile(r'^\s*(?:#include|import)\s+"([^"]+)"', re.M)
SOURCE_SUFFIXES = (".h", ".cc", ".proto")


def read_layers(path):
  """{package: (floor number, floor name)}."""
  floors = {}
  with open(path) as f:
    for line in f:
      line = line.split("#", 1)[0].strip()
      if not line:
        continue
      head, packages = line.split(":", 1)
      number, name = head.split(" ", 1)
      for package in packages.split():
        if package in floors:
          raise ValueError("%s: package %s listed twice" % (path, package))
        floors[package] = (int(number), name.strip())
  return floors


def package_of(label):
  """'//a/b:c' -> 'a/b'; None for external labels."""
  if not label.startswith("//"):
    return None
  return label[2:].split(":", 1)[0]


def rule_edges(query_xml):
  """(from label, to label) for every non-alias rule's inputs, and the set
  of packages that have rules."""
  edges = []
  packages = set()
  for rule in ElementTree.parse(query_xml).getroot().iter("rule"):
    name = rule.get("name")
    packages.add(package_of(name))
    if rule.get("class") == "alias":
      continue
    for rule_input in rule.iter("rule-input"):
      edges.append((name, rule_input.get("name")))
  return edges, packages


def include_edges(source_root, packages):
  """(file, included path) for every include or import of a file of this
  source tree (a header, a proto, or the .pb.h of a proto), with the package
  of each side (the longest package that prefixes the path). Headers of
  other repositories (Bazel's own tools/cpp/..., say) are not this tree's."""
  by_length = sorted(packages, key=len, reverse=True)

  def in_tree(path):
    if path.endswith(".pb.h"):
      path = path[:-len(".pb.h")] + ".proto"
    return os.path.isfile(os.path.join(source_root, path))

  def owner(path):
    if not in_tree(path):
      return None
    for package in by_length:
      if path.startswith(package + "/"):
        return package
    return None

  edges = []
  for package in packages:
    folder = os.path.join(source_root, package)
    if not os.path.isdir(folder):
      continue
    for entry in sorted(os.listdir(folder)):
      if not entry.endswith(SOURCE_SUFFIXES):
        continue
      with open(os.path.join(folder, entry), errors="replace") as f:
        text = f.read()
      for included in INCLUDE.findall(text):
        target = owner(included)
        if target is not None:
          edges.append(("%s/%s" % (package, entry), package, included, target))
  return edges


def alias_labels(query_xml):
  """The labels of every alias rule (old names kept working)."""
  return sorted(rule.get("name")
                for rule in ElementTree.parse(query_xml).getroot().iter("rule")
                if rule.get("class") == "alias")


# The front page, the two commands and the design's home: where a newcomer
# reads which target to run.
DOCUMENTS = ("README.md", "run.sh", "test.sh", "docs")


def documents_naming_aliases(source_root, aliases):
  """'FILE: names the alias LABEL' for each document paragraph (text
  between blank lines) that names an alias without saying it is one: the
  docs name the real target, and list old names once, as aliases."""
  found = []
  paths = []
  for entry in DOCUMENTS:
    path = os.path.join(source_root, entry)
    if os.path.isdir(path):
      paths += [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".md")]
    elif os.path.isfile(path):
      paths.append(path)
  for path in paths:
    with open(path, errors="replace") as f:
      paragraphs = f.read().split("\n\n")
    for paragraph in paragraphs:
      if "alias" in paragraph:
        continue
      for label in aliases:
        if re.search(re.escape(label) + r"(?![\w/.-])", paragraph):
          found.append("%s: names the alias %s; name its target" %
                       (os.path.relpath(path, source_root), label))
  return found


def packages_not_in_architecture(source_root, floors):
  """'docs/architecture.md does not name PACKAGE' for each package of the
  layers file the house's walk-through leaves out: named as `package/`, or,
  for a subpackage, its top folder named and its own name in backticks
  there (`examples/`'s row naming `slurm/`)."""
  path = os.path.join(source_root, "docs", "architecture.md")
  if not os.path.isfile(path):
    return []
  with open(path, errors="replace") as f:
    text = f.read()
  quoted = " ".join(re.findall(r"`([^`]*)`", text))
  missing = []
  for package in sorted(floors):
    top, last = package.split("/")[0], package.split("/")[-1]
    named = ("`%s/`" % package) in text or (
        ("`%s/`" % top) in text and re.search(r"(^|[^\w])%s(/|\b)" % re.escape(last), quoted))
    if not named:
      missing.append("docs/architecture.md does not name the package %s" % package)
  return missing


def cycles(graph):
  """The strongly connected components of more than one node (Tarjan)."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(node):
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for nxt in sorted(graph.get(node, ())):
      if nxt not in index:
        visit(nxt)
        low[node] = min(low[node], low[nxt])
      elif nxt in on_stack:
        low[node] = min(low[node], index[nxt])
    if low[node] == index[node]:
      component = []
      while True:
        top = stack.pop()
        on_stack.discard(top)
        component.append(top)
        if top == node:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for node in sorted(graph):
    if node not in index:
      visit(node)
  return found


def check(floors, rule_edge_list, rule_packages, include_edge_list):
  problems = []
  for package in sorted(p for p in rule_packages if p is not None and p not in floors):
    problems.append("package %s is on no floor of the layers file" % package)

  def floor(package):
    return floors.get(package, (None, "?"))

  same_floor = {}

  def judge(source, source_package, target, target_package, how):
    if source_package == target_package or target_package is None:
      return
    (f_from, name_from), (f_to, name_to) = floor(source_package), floor(target_package)
    if f_from is None or f_to is None:
      return  # reported above
    if f_to > f_from:
      problems.append("%s (floor %d %s) %s %s (floor %d %s)" %
                      (source, f_from, name_from, how, target, f_to, name_to))
    elif f_to == f_from:
      same_floor.setdefault(source_package, set()).add(target_package)

  for source, target in rule_edge_list:
    judge(source, package_of(source), target, package_of(target), "depends on")
  for source, source_package, included, target_package in include_edge_list:
    judge(source, source_package, included, target_package, "includes")
  for component in cycles(same_floor):
    problems.append("packages on one floor depend on each other in a cycle: %s" %
                    " -> ".join(component))
  return problems


# What may be seen from anywhere: a program (nothing links it; people and
# scripts run it), whatever its floor.
PROGRAM_CLASSES = ("cc_binary", "sh_binary", "py_binary")


def visibility_problems(query_xml, floors):
  """'LABEL (floor N) is visible to ...' for each rule whose visibility
  lets a package below its floor use it: a visibility list names only
  packages on the rule's floor or above (tools/floors.bzl's
  floors_above()); //visibility:public only on floor 0, for programs and
  for other repositories' BUILD files (third_party/)."""
  found = []
  for rule in ElementTree.parse(query_xml).getroot().iter("rule"):
    package = package_of(rule.get("name"))
    if package is None or package not in floors or package.startswith("third_party"):
      continue
    floor, floor_name = floors[package]
    for visibility in rule.iter("list"):
      if visibility.get("name") != "visibility":
        continue
      for label in (l.get("value") for l in visibility.iter("label")):
        if label == "//visibility:public":
          if floor > 0 and rule.get("class") not in PROGRAM_CLASSES:
            found.append("%s (floor %d %s) is //visibility:public: packages below its floor "
                         "could use it; use floors_above() (tools/floors.bzl)" %
                         (rule.get("name"), floor, floor_name))
          continue
        seen_by = package_of(label)
        if seen_by is None or label == "//visibility:private" or seen_by not in floors:
          continue
        if floors[seen_by][0] < floor:
          found.append("%s (floor %d %s) is visible to %s (floor %d %s), a lower floor" %
                       (rule.get("name"), floor, floor_name, label, floors[seen_by][0],
                        floors[seen_by][1]))
  return found


PRIVATE_DEFAULT = 'default_visibility = ["//visibility:private"]'


def public_by_default(source_root, floors):
  """'PACKAGE/BUILD does not declare ...' for each package of the layers
  file (third_party/ aside: other repositories' BUILD files) whose BUILD
  file does not make its targets private by default: a target without a
  visibility of its own shows none in bazel query, so only this keeps the
  floors from leaking through a package's default."""
  found = []
  for package in sorted(floors):
    path = os.path.join(source_root, package, "BUILD")
    if package.startswith("third_party") or not os.path.isfile(path):
      continue
    with open(path, errors="replace") as f:
      if PRIVATE_DEFAULT not in f.read():
        found.append("%s/BUILD does not declare package(%s)" % (package, PRIVATE_DEFAULT))
  return found


def floors_bzl(floors):
  """tools/floors.bzl's text: the layers file as Starlark, and
  floors_above(), the visibility of a target that packages on its floor and
  above may use."""
  lines = ['"""The floors of tools/layers.txt, for BUILD files. Generated by',
           "`python3 tools/layering_check.py --write_floors tools/layers.txt tools/floors.bzl`;",
           'the layering test fails when it is out of date."""', "", "FLOOR_OF_PACKAGE = {"]
  lines += ['    "%s": %d,' % (package, floors[package][0]) for package in sorted(floors)]
  lines += ["}", "", "def floors_above():",
            '    """Who may use a target of the calling package: the packages on its',
            '    floor and above (docs/architecture.md, "The rule"). A package that',
            '    is on no floor fails here: add it to tools/layers.txt first."""',
            "    floor = FLOOR_OF_PACKAGE[native.package_name()]",
            "    return sorted([",
            '        "//%s:__pkg__" % package',
            "        for package, other in FLOOR_OF_PACKAGE.items()",
            "        if other >= floor",
            "    ])", ""]
  return "\n".join(lines)


def floors_bzl_problems(source_root, floors):
  """'tools/floors.bzl is out of date' when it is not floors_bzl(floors)."""
  path = os.path.join(source_root, "tools", "floors.bzl")
  if not os.path.isfile(path):
    return []
  with open(path) as f:
    if f.read() == floors_bzl(floors):
      return []
  return ["tools/floors.bzl is out of date with tools/layers.txt: run python3 "
          "tools/layering_check.py --write_floors tools/layers.txt tools/floors.bzl"]


# The longest function a source file may hold, in lines from its signature
# to its closing brace (docs/architecture.md, "The rule").
MAX_FUNCTION_LINES = 80
# Not functions, though written like them: a parameterized suite's table.
NOT_FUNCTIONS = ("INSTANTIATE_TEST_SUITE_P",)


def long_functions(source_root, packages):
  """'FILE:LINE: NAME is N lines' for each function of the packages' C++
  sources longer than MAX_FUNCTION_LINES."""
  found = []
  for package in sorted(packages):
    folder = os.path.join(source_root, package)
    if not os.path.isdir(folder) or package.startswith("third_party"):
      continue
    for name in sorted(os.listdir(folder)):
      if name.endswith((".cc", ".h")):
        with open(os.path.join(folder, name), errors="replace") as f:
          found += long_functions_in(os.path.join(package, name), f.read().split("\n"))
  return found


def long_functions_in(path, lines):
  """long_functions for one file's lines: a definition starts at a line in
  column 0 that opens a parameter list and ends at the next line that
  starts with '}' (the project's format, clang-format's Google style)."""
  found = []
  i = 0
  while i < len(lines):
    line = lines[i]
    opens = re.match(r"^[A-Za-z_][^;]*\(", line) and not re.match(
        r"^(namespace|class|struct|enum|extern|using|typedef|static_assert)\b", line)
    if not opens or line.rstrip().endswith(";"):
      i += 1
      continue
    j = i
    while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
      j += 1
    if j == len(lines) or lines[j].rstrip().endswith(";"):
      i = j + 1
      continue
    k = j + 1
    while k < len(lines) and not lines[k].startswith("}"):
      k += 1
    named = re.search(r"([A-Za-z_][\w:~]*)\s*\(", line)
    name = named.group(1) if named else line.strip()
    if k - i + 1 > MAX_FUNCTION_LINES and name not in NOT_FUNCTIONS:
      found.append("%s:%d: %s is %d lines (at most %d)" %
                   (path, i + 1, name, k - i + 1, MAX_FUNCTION_LINES))
    i = k + 1
  return found


def main(argv):
  if len(argv) == 4 and argv[1] == "--write_floors":
    with open(argv[3], "w") as f:
      f.write(floors_bzl(read_layers(argv[2])))
    return 0
  if len(argv) not in (3, 4):
    print(__doc__, file=sys.stderr)
    return 2
  floors = read_layers(argv[1])
  rule_edge_list, rule_packages = rule_edges(argv[2])
  include_edge_list = include_edges(argv[3], rule_packages - {None}) if len(argv) == 4 else []
  problems = check(floors, rule_edge_list, rule_packages, include_edge_list)
  problems += visibility_problems(argv[2], floors)
  if len(argv) == 4:
    problems += floors_bzl_problems(argv[3], floors)
    problems += public_by_default(argv[3], floors)
    problems += long_functions(argv[3], rule_packages - {None})
    problems += documents_naming_aliases(argv[3], alias_labels(argv[2]))
    problems += packages_not_in_architecture(argv[3], floors)
  for problem in problems:
    print(problem)
  if problems:
    print("layering: %d violation(s)" % len(problems))
    return 1
  print("layering: %d packages on %d floors; %d dependencies and %d includes checked, "
        "none upward, no cycle on a floor" %
        (len(rule_packages - {None}), len({f for f, _ in floors.values()}),
         len(rule_edge_list), len(include_edge_list)))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
