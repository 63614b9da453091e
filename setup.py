"""Builds launchbench's C extensions; metadata lives in pyproject.toml.

Neither extension links against CUDA: ``_floor`` loads the driver with
dlopen at run time, so the package builds on machines without a toolkit.
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("launchbench.workloads._tls", ["launchbench/workloads/_tls.c"]),
        Extension("launchbench.workloads._floor", ["launchbench/workloads/_floor.c"], libraries=["dl"]),
    ]
)
