"""Conformance suites for a team's plugins, one macro per plugin kind.

In a team's BUILD:

    load("//conformance:conformance_test.bzl", "reducer_conformance_test")

    reducer_conformance_test(
        name = "my_sum_conformance_test",
        plugin = "my_sum",
        library = ":libmy_sum_reducer.so",
    )

Each test runs //conformance:conformance on the plugin: the kind's suite
(conformance/<kind>_conformance.h lists its checks) prints a PASS or FAIL
line per check, with the reasons, and fails when one check fails.

Common args:
  name: the test's name.
  plugin: the plugin's registered name.
  library: the shared-library target (cc_binary, linkshared) that registers
    it; none for a built-in plugin.
  options: the plugin's options, as the body of a config's `options { }`:
    '[type.googleapis.com/receipt_parity.MyOptions] { field: 1 }' (no
    single quotes).
  expect_failure: a text: the test passes only when a check fails with it
    (a deliberately wrong plugin, showing the message a team would see).
  size: the test's size.
"""

def _conformance_test(name, kind, plugin, library, options, expect_failure, size, extra_args = [], data = [], **kwargs):
    args = ["$(rootpath //conformance:conformance)", "--kind=" + kind]
    if plugin:
        args.append("--plugin=" + plugin)
    if library:
        args.append("--plugin_library=$(rootpath %s)" % library)
        data = data + [library]
    for text, what in [(options, "options"), (expect_failure, "expect_failure")]:
        if "'" in text:
            fail("%s: %s may not hold a single quote" % (name, what))
    if options:
        args.append("'--options=%s'" % options)
    if expect_failure:
        args.append("'--expect_failure=%s'" % expect_failure)
    native.sh_test(
        name = name,
        srcs = ["//conformance:run_conformance.sh"],
        args = args + extra_args,
        data = ["//conformance:conformance"] + data,
        size = size,
        **kwargs
    )

def reducer_conformance_test(name, plugin, library = None, options = "", bitwise_allreduce_sum = False, timeout_seconds = 5, expect_failure = "", size = "medium", **kwargs):
    """The reducer suite: 2 and 3 rank processes over one Gloo group.

    bitwise_allreduce_sum: the plugin claims to give allreduce_sum's bits.
    timeout_seconds: the group's timeout, within which a dead peer must
      surface as an error.
    """
    extra = ["--timeout_seconds=%d" % timeout_seconds]
    if bitwise_allreduce_sum:
        extra.append("--bitwise_allreduce_sum")
    _conformance_test(name, "reducer", plugin, library, options, expect_failure, size, extra, **kwargs)

def sampler_policy_conformance_test(name, plugin, library = None, options = "", expect_failure = "", size = "small", **kwargs):
    """The sampler policy suite (3 rank processes build the same plan)."""
    _conformance_test(name, "sampler_policy", plugin, library, options, expect_failure, size, **kwargs)

def loss_weighting_conformance_test(name, plugin, library = None, options = "", expect_failure = "", size = "small", **kwargs):
    """The loss weighting suite: the effective-batch rule under every split."""
    _conformance_test(name, "loss_weighting", plugin, library, options, expect_failure, size, **kwargs)

def metric_dedup_conformance_test(name, plugin, library = None, options = "", expect_failure = "", size = "small", **kwargs):
    """The metric dedup suite: each receipt counted once."""
    _conformance_test(name, "metric_dedup", plugin, library, options, expect_failure, size, **kwargs)

def model_conformance_test(name, plugin = "", library = None, options = "", torchscript = None, input_shape = [1, 16, 16], num_classes = 4, allowed_findings = [], expect_failure = "", size = "small", data = [], **kwargs):
    """The model suite, on a model plugin or a TorchScript file.

    torchscript: a TorchScript file's label, run by the torchscript plugin
      (then no plugin).
    input_shape: one receipt's shape ([channels, height, width]).
    num_classes: logits per receipt.
    allowed_findings: layer audit finding kinds the model may have
      ("dropout", "batch_norm_training", ...); any other finding fails.
    data: files the model's options name.
    """
    extra = [
        "--input_shape=" + ",".join([str(s) for s in input_shape]),
        "--num_classes=%d" % num_classes,
    ]
    if allowed_findings:
        extra.append("--allowed_findings=" + ",".join(allowed_findings))
    if torchscript:
        if plugin:
            fail("%s: give a plugin or a torchscript file, not both" % name)
        extra.append("--torchscript=$(rootpath %s)" % torchscript)
        data = data + [torchscript]
    _conformance_test(name, "model", plugin, library, options, expect_failure, size, extra, data, **kwargs)
