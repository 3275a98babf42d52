"""The fixtures of the Python test kit (testkit/fixtures.py), for every suite."""

pytest_plugins = ["testkit.fixtures"]
