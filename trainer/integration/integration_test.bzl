"""The train binary's integration tests: a Python script beside this BUILD
file that runs real binaries (trainer/integration/integration_support.py).

train_integration_test(name, programs, args, data, size, tags) is an
sh_test of <name>.py whose arguments are the paths of `programs`, in order
(the script pops them from sys.argv: integration_support takes the first,
the train binary), then `args`, with the shared support module, `programs`
and `data` as data.
"""

def train_integration_test(
        name,
        programs = ["//trainer:train"],
        args = [],
        data = [],
        size = "medium",
        tags = None):
    native.sh_test(
        name = name,
        size = size,
        srcs = [name + ".py"],
        args = ["$(location %s)" % p for p in programs] + args,
        data = [":integration_support"] + programs + data,
        tags = tags,
    )
