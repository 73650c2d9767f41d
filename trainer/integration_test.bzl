"""The trainer's integration tests: a Python script beside the BUILD file
that runs real binaries (trainer/integration_support.py).

train_integration_test(name, programs, data, size) is an sh_test of
<name>.py whose arguments are the paths of `programs`, in order (the
script pops them from sys.argv: integration_support takes the first, the
train binary), with the shared support module and `programs` as data.
"""

def train_integration_test(name, programs = [":train"], data = [], size = "medium", tags = None):
    native.sh_test(
        name = name,
        size = size,
        srcs = [name + ".py"],
        args = ["$(location %s)" % p for p in programs],
        data = [":integration_support"] + programs + data,
        tags = tags,
    )
