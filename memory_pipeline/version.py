"""The installed distribution's version (pyproject.toml), so it is written in one place."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("memory_pipeline")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
