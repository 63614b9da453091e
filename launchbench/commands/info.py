"""``launchbench info``: the GPU, driver, runtime and host a run would record (launchbench.base.device)."""
from __future__ import annotations

import sys

from ..base.device import device_info, host_info
from ..base.errors import UserError

#: what a machine without a GPU can still run: said where info finds none
SIMULATOR_HINT = ("; without a GPU, smoke runs work on CPU under the CUDA simulator: e.g. "
                  "launchbench compare --simulator")


def register(sub) -> None:
    p = sub.add_parser("info", help="print the GPU, driver, runtime and host this machine would measure on",
                       description="Print the GPU, driver, CUDA runtime and host a run here would record in its "
                       "JSON, and the numba-cuda this interpreter imports. Without a GPU it says so (exit 2); the "
                       "commands' --simulator runs then work on CPU under the CUDA simulator.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run_info)


def _run_info(args) -> int:
    import json

    try:
        data = {"host": host_info(), "device": device_info()}
    except UserError as exc:
        if not args.json:
            raise UserError(f"{exc}{SIMULATOR_HINT}") from None
        # --json still prints JSON (scripts read it): the device says why there is none, exit 2
        data = {"host": host_info(), "device": {"name": None, "error": f"{exc}{SIMULATOR_HINT}"}}
    from importlib.metadata import PackageNotFoundError, version

    try:
        data["numba_cuda"] = version("numba-cuda")
    except PackageNotFoundError:
        data["numba_cuda"] = None
    if args.json:
        print(json.dumps(data, indent=2))
        if data["device"].get("error"):
            print(f"launchbench: error: {data['device']['error']}", file=sys.stderr)
            return 2
    else:
        for section in ("device", "host"):
            for key, value in data[section].items():
                print(f"{section}.{key}: {value}")
        print(f"numba-cuda: {data['numba_cuda']}")
    return 0
