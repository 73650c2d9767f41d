"""One macro for every plugin, so no registration is ever dropped.

plugin_library(name, ...) makes two targets (Envoy's extension layout):
  :name               the plugin's logic, a plain cc_library, testable alone;
  :name_registration  the factory and its static registrar, alwayslink = 1.
A cc_binary links every object of an alwayslink library, so the registrar
runs even though nothing refers to it by name. Link the _registration
target into binaries (see plugins/builtin_plugins.bzl), never only :name.
"""

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
        visibility = visibility,
    )
