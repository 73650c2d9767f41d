"""The one reviewable list of plugins linked into the trainer.

Each entry is "kind/name": the plugin_library target //<package>:<name>
(see plugins/plugin.bzl) whose _registration target registers <name>.
To add a built-in plugin: write it with plugin_library() and add it here.
"""

BUILTIN_PLUGINS = {
    "sampler_policy/duplicate_pad": "//samplers:duplicate_pad",
    "sampler_policy/masked_tail": "//samplers:masked_tail",
    "sampler_policy/drop_tail": "//samplers:drop_tail",
    "sampler_policy/global_batches": "//samplers:global_batches",
    "loss_weighting/global_count": "//weighting:global_count",
    "loss_weighting/rank_mean": "//weighting:rank_mean",
    "loss_weighting/class_balanced": "//weighting:class_balanced",
    "loss_weighting/micro_batch_mean": "//weighting:micro_batch_mean",
    "reducer/allreduce_sum": "//reducers:allreduce_sum",
    "reducer/rank_average": "//reducers:rank_average",
    "reducer/ordered_sum": "//reducers:ordered_sum",
    "reducer/mpi_allreduce": "//reducers:mpi_allreduce",
    "metric_dedup/by_receipt_id": "//metrics:by_receipt_id",
    "metric_dedup/none": "//metrics:none",
    "model/cnn": "//model:cnn",
    "model/mlp": "//model:mlp",
    "model/linear": "//model:linear",
    "model/torchscript": "//model:torchscript",
    "model/python_module": "//model:python_module",
    "lr_schedule/constant": "//schedules:constant",
    "lr_schedule/linear_warmup_cosine": "//schedules:linear_warmup_cosine",
    "lr_schedule/step": "//schedules:step",
    "optimizer/sgd": "//optimizers:sgd",
    "optimizer/adam": "//optimizers:adam",
    "optimizer/adamw": "//optimizers:adamw",
}

def builtin_plugin_registrations():
    """The alwayslink targets that register every built-in plugin."""
    return [label + "_registration" for label in BUILTIN_PLUGINS.values()]

def builtin_plugin_names():
    """"kind/name" of every built-in plugin, for the registration test."""
    return sorted(BUILTIN_PLUGINS.keys())
