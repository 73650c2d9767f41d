"""One macro for every plugin, so no registration is ever dropped.

plugin_library(name, ...) makes two targets (Envoy's extension layout):
  :name               the plugin's logic, a plain cc_library, testable alone;
  :name_registration  the factory and its static registrar, alwayslink = 1.
A cc_binary links every object of an alwayslink library, so the registrar
runs even though nothing refers to it by name. Binaries link every
built-in registration through //plugins/builtin:builtin_plugins (the list
in plugins/builtin_plugins.bzl), never only :name. A _registration target
is visible only to its own package (its tests), to //plugins/builtin (the
list), to //parity's tests and to the example plugins' hosts in
//examples/plugins, so no other target can link a single plugin behind the
list's back.
"""

REGISTRATION_VISIBILITY = [
    "//plugins/builtin:__pkg__",
    "//parity:__pkg__",
    "//examples/plugins:__pkg__",
]

def plugin_library(
        name,
        srcs = [],
        hdrs = [],
        deps = [],
        registration_srcs = [],
        registration_deps = [],
        visibility = None):
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        deps = deps,
        visibility = visibility,
    )
    native.cc_library(
        name = name + "_registration",
        srcs = registration_srcs,
        deps = [
            ":" + name,
            "//plugins:plugin_registry",
        ] + registration_deps,
        alwayslink = 1,
        visibility = REGISTRATION_VISIBILITY,
    )

def plugin_shared_library(
        name,
        srcs,
        deps = [],
        options = None,
        visibility = None,
        testonly = None):
    """A plugin built as a shared library that a config loads through
    `plugin_library` (plugins/plugin_library.h): a cc_binary with
    linkshared = 1 against the header-only //plugins:plugin_api, so its
    registrations go into the host's registry, never a copy of its own.

    name:    the file, "lib<something>.so".
    options: its own options .proto file, if only it uses it: compiled as
             <stem>_proto and <stem>_cc_proto (a proto several libraries
             share is a dep instead).
    """
    extra = []
    if options:
        stem = options[:-len(".proto")]
        native.proto_library(
            name = stem + "_proto",
            srcs = [options],
            testonly = testonly,
        )
        native.cc_proto_library(
            name = stem + "_cc_proto",
            deps = [":" + stem + "_proto"],
            testonly = testonly,
        )
        extra.append(":" + stem + "_cc_proto")
    native.cc_binary(
        name = name,
        srcs = srcs,
        linkshared = 1,
        deps = extra + deps + ["//plugins:plugin_api"],
        visibility = visibility,
        testonly = testonly,
    )
