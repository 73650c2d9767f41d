"""LibTorch 2.11 (the torch/ folder of PyPI's torch wheel) as the repository @libtorch.

Where it comes from, first match wins:
  1. --repo_env=LIBTORCH_DIR=/path/to/site-packages/torch  (a team's own LibTorch 2.11)
  2. the torch in the project-owned virtual environment that tools/install_deps.sh makes:
     $RECEIPT_PARITY_TORCH_VENV, else default_venv.
The rule makes symlink farms, so that
  * include/ holds every top-level entry of torch/include EXCEPT google/: the wheel bundles
    protobuf 3.13's headers there, which would shadow Debian's protobuf 3.21 headers and break
    every translation unit that includes a generated .pb.h;
  * lib/ holds LibTorch's shared libraries AND the CUDA libraries libtorch_cuda needs that the
    CUDA toolkit lacks (from site-packages/nvidia/*/lib beside the wheel). A cc_library's
    libraries land in one Bazel _solib folder, where the wheel's RPATH entry $ORIGIN finds
    them; its $ORIGIN/../../nvidia/... entries are wrong once reached through _solib symlinks;
  * bin/python runs the Python that has this torch (for the Python cross-checks and the DDP
    baseline), or fails saying that none was found.
"""

_NVIDIA_LIB_DIRS = ["cu13/lib", "cusparselt/lib", "nvshmem/lib", "nccl/lib", "cudnn/lib"]

def _expand_home(rctx, path):
    if path.startswith("~/"):
        return rctx.os.environ.get("HOME", "") + path[1:]
    return path

def _child(path, relative):
    for part in relative.split("/"):
        path = path.get_child(part)
    return path

def _torch_in_venv(rctx, venv):
    lib = rctx.path(venv).get_child("lib")
    if lib.exists:
        for entry in lib.readdir():
            torch = _child(entry, "site-packages/torch")
            if entry.basename.startswith("python") and torch.exists:
                return str(torch)
    return None

def _find_torch_dir(rctx):
    explicit = rctx.os.environ.get("LIBTORCH_DIR", "")
    if explicit:
        return _expand_home(rctx, explicit), "LIBTORCH_DIR"
    venv = rctx.os.environ.get("RECEIPT_PARITY_TORCH_VENV", "") or rctx.attr.default_venv
    venv = _expand_home(rctx, venv)
    found = _torch_in_venv(rctx, venv)
    if not found:
        fail("LibTorch 2.11 not found: no lib/python*/site-packages/torch in %s. " % venv +
             "Run tools/install_deps.sh, or point the build at a LibTorch 2.11 with " +
             "--repo_env=LIBTORCH_DIR=/path/to/site-packages/torch")
    return found, "the project's virtual environment " + venv

def _python_for(rctx, torch_dir):
    # site-packages/torch -> lib/pythonX.Y/site-packages -> <prefix>/bin/python
    prefix = rctx.path(torch_dir).dirname.dirname.dirname.dirname
    python = _child(prefix, "bin/python")
    return str(python) if python.exists else None

def _write_python_wrapper(rctx, torch_dir):
    python = _python_for(rctx, torch_dir)
    if python:
        body = "exec '%s' \"$@\"\n" % python
    else:
        body = ("echo 'no Python found beside the LibTorch at %s (expected <prefix>/bin/python " +
                "for <prefix>/lib/pythonX.Y/site-packages/torch)' >&2\nexit 1\n") % torch_dir
    rctx.file("bin/python", "#!/bin/sh\n# The Python whose torch is @libtorch.\n" + body,
              executable = True)

def _link_headers_and_libraries(rctx, root):
    for entry in root.get_child("include").readdir():
        if entry.basename != "google":
            rctx.symlink(entry, "include/" + entry.basename)
    for entry in root.get_child("lib").readdir():
        if ".so" in entry.basename:
            rctx.symlink(entry, "lib/" + entry.basename)
    nvidia = root.dirname.get_child("nvidia")
    for sub in _NVIDIA_LIB_DIRS:
        folder = _child(nvidia, sub)
        if not folder.exists:
            continue
        for entry in folder.readdir():
            if ".so" in entry.basename and not rctx.path("lib/" + entry.basename).exists:
                rctx.symlink(entry, "lib/" + entry.basename)

def _libtorch_repository_impl(rctx):
    torch_dir, source = _find_torch_dir(rctx)
    root = rctx.path(torch_dir)
    if not _child(root, "include/torch/csrc/api/include").exists or not root.get_child("lib").exists:
        fail("%s (from %s) is not a LibTorch: it lacks include/torch/csrc/api/include or lib/" %
             (torch_dir, source))
    version = root.get_child("version.py")
    if version.exists and "__version__ = '2.11." not in rctx.read(version):
        fail("%s (from %s) is not LibTorch 2.11: its version.py says otherwise" % (torch_dir, source))
    _link_headers_and_libraries(rctx, root)
    _write_python_wrapper(rctx, torch_dir)
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)
    rctx.file("torch_dir.txt", torch_dir + "\n")
    rctx.template("BUILD.bazel", rctx.attr.build_file, {})

libtorch_repository = repository_rule(
    implementation = _libtorch_repository_impl,
    attrs = {
        "default_venv": attr.string(mandatory = True),
        "build_file": attr.label(allow_single_file = True, mandatory = True),
    },
    environ = ["LIBTORCH_DIR", "RECEIPT_PARITY_TORCH_VENV", "HOME"],
    local = True,
)
