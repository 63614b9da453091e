"""The subcommands: each module here adds its parsers with ``register(subparsers)`` (listed in
launchbench.cli) and turns parsed options into a run of the layers below, then renders the result.
The top layer: it may import every other one, and none imports it (docs/architecture.md).
"""
