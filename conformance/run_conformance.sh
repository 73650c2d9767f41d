#!/bin/bash
# A conformance test (conformance_test.bzl): the suite's binary, then its
# arguments.
exec "$@"
