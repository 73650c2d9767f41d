"""One macro for every plugin, so no registration is ever dropped.

plugin_library(name, ...) makes two targets (Envoy's extension layout):
  :name               the plugin's logic, a plain cc_library, testable alone;
  :name_registration  the factory and its static registrar, alwayslink = 1.
A cc_binary links every object of an alwayslink library, so the registrar
runs even though nothing refers to it by name. Binaries link every
built-in registration through //plugins/builtin:builtin_plugins (the list
in plugins/builtin_plugins.bzl), never only :name. A _registration target
is visible only to its own package (its tests), to //plugins and its
subpackages (the list, and the plugin framework's tests), to //parity's
tests and to the example plugins' hosts in //examples/plugins, so no other
target can link a single plugin behind the list's back.
"""

REGISTRATION_VISIBILITY = [
    "//plugins:__subpackages__",
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
