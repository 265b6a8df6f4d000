"""The suite's two workers share out tests without setting up a shared fixture twice."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def module_wide():
    return object()


def test_tests_sharing_a_module_fixture_are_one_xdist_group(request, module_wide):
    groups = [mark.args[0] for mark in request.node.iter_markers("xdist_group")]
    assert groups == [f"{__name__.replace('.', '/')}.py::module_wide in {__name__}"]
    if request.config.getoption("dist", "no") == "loadgroup":
        # pytest-xdist reads the group from the node id it rewrites, as what follows its last
        # "@" (a pytest that ignores the rewrite splits groups: the reason the test extra caps
        # pytest).
        assert request.node.nodeid.endswith("@" + groups[0])
        assert request.node.nodeid.split("@")[-1] == groups[0]


def test_a_test_without_shared_fixtures_is_in_no_group(request, tmp_path):
    assert list(request.node.iter_markers("xdist_group")) == []
