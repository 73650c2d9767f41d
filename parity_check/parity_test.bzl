"""parity_test: `bazel test` that proves parity for a team's own config.

In a team's BUILD:

    load("//parity_check:parity_test.bzl", "parity_test")

    parity_test(
        name = "my_config_parity_test",
        config = "my.pbtxt",
        plugins = [":libmy_reducer.so"],
        world_sizes = [2, 3],
    )

The test (parity_check/parity_test_driver.py) trains the config for real
at each world size (`train --set world_size=W`: separate processes over a
real process group, each run beside its one-worker reference and judged
whole-run), and runs the one-process simulated check on `split`. It fails,
printing the parity report's own lines (each parameter outside its
tolerance with its differences and the tolerance, and the report's
reasons), when parity fails, when validation counts a receipt twice, or
when the sampler audit finds an id trained twice in an epoch although the
policy promises not to (`sampler_duplicates = "none"`; "padding" for a
policy that pads with repeats, as duplicate_pad does).

Args:
  name: the test's name.
  config: the team's training config (a label of a .pbtxt file).
  plugins: shared-library plugin targets (cc_binary, linkshared) the config
    uses; they replace the config's own plugin_library list
    (`--set plugin_library=[...]`), so the config may name them as they lie
    for `bazel run`.
  world_sizes: the worker counts to train at.
  split: the simulated check's examples per rank ("3,1").
  sets: more FIELD_PATH=VALUE overrides for every run (train's --set).
  sampler_duplicates: "none" or "padding" (above).
  expect_failure: a text: the test passes only when a finding holds it
    (for a deliberately wrong plugin, to show the message a team sees).
  data: more files the config reads (a manifest, its images).
  size: the test's size ("large": each world size trains twice, with its
    reference).
"""

def parity_test(
        name,
        config,
        plugins = [],
        world_sizes = [2, 3],
        split = "3,1",
        sets = [],
        sampler_duplicates = "none",
        expect_failure = "",
        data = [],
        size = "large",
        **kwargs):
    args = [
        "--train=$(rootpath //trainer:train)",
        "--parity=$(rootpath //parity_check:parity)",
        "--config=$(rootpath %s)" % config,
        "--world_sizes=" + ",".join([str(w) for w in world_sizes]),
        "--split=" + split,
        "--sampler_duplicates=" + sampler_duplicates,
    ]
    args += ["--plugin=$(rootpath %s)" % p for p in plugins]
    # Test args are tokenized as a shell would: one quoted word per
    # override (which therefore may not hold a single quote).
    for s in sets:
        if "'" in s:
            fail("parity_test %s: sets may not hold a single quote: %s" % (name, s))
        args.append("'--set=%s'" % s)
    if expect_failure:
        if "'" in expect_failure:
            fail("parity_test %s: expect_failure may not hold a single quote" % name)
        args.append("'--expect_failure=%s'" % expect_failure)
    native.sh_test(
        name = name,
        srcs = ["//parity_check:parity_test_driver.py"],
        args = args,
        data = [
            config,
            "//trainer:train",
            "//parity_check:parity",
        ] + plugins + data,
        size = size,
        **kwargs
    )
