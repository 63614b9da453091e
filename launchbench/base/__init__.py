"""The bottom layer: what every other layer may use, importing no other launchbench layer.

errors (UserError, NoGPUError), atomic (whole-file writes), device (the GPU guard, host and
device facts), outputs (output paths checked before any work). docs/architecture.md has the layers.
"""
