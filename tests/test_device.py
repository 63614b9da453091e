"""launchbench.base.device: the GPU guard's one-line refusals and import diagnoses (CPU)."""
import pytest

from launchbench.base import device
from launchbench.base.errors import NoGPUError


def test_simulator_is_refused_with_the_smoke_hint_only_where_a_smoke_mode_exists(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    with pytest.raises(NoGPUError, match="--simulator"):
        device.require_gpu()
    with pytest.raises(NoGPUError) as exc:
        device.require_gpu(smoke_flag=False)
    assert "--simulator" not in str(exc.value)
    assert "\n" not in str(exc.value)
    assert device.require_gpu(allow_simulator=True) is None


@pytest.mark.parametrize(
    "message, hint",
    [
        ("module 'numpy' has no attribute 'row_stack'", "numpy<2.5"),
        ("cannot import name 'NPDatetime' from 'numba.cuda.types'", "numba==0.65.1"),
        ("cannot import name 'GraphBuilder' from 'cuda.core'", "cuda-core==0.7.0"),
        ("something else entirely", "constraints.txt"),
    ],
)
def test_import_failures_name_the_likely_cause(message, hint):
    text = device.diagnose_import_error(ImportError(message))
    assert hint in text and "\n" not in text


def test_one_line_squeezes_driver_errors():
    assert device.one_line(RuntimeError("Error at driver init:\n\n  no driver\n")) == "Error at driver init: no driver"


def test_host_info_has_the_fields_results_record():
    info = device.host_info()
    assert {"python", "platform", "cpu", "cpu_count"} <= set(info)


def test_info_json_without_a_gpu_still_prints_json(monkeypatch, capsys):
    """Scripts read `info --json`: without a GPU it once printed only the error line."""
    import json

    from launchbench import cli

    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    from launchbench.base.errors import NoGPUError

    def no_gpu():
        raise NoGPUError("no CUDA GPU is available (test)")

    from launchbench.commands import info

    monkeypatch.setattr(info, "device_info", no_gpu)
    rc = cli.main(["info", "--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert rc == 2 and doc["device"]["name"] is None
    assert doc["device"]["error"].startswith("no CUDA GPU is available (test); without a GPU")
    assert doc["host"]["python"] and err.count("\n") == 1 and "no CUDA GPU" in err
    assert "--simulator" in err  # what still runs here
    assert cli.main(["info"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "under the CUDA simulator: e.g. launchbench compare --simulator" in err


def test_every_command_has_a_description_and_bisect_its_exit_status():
    from launchbench import cli

    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    missing = [name for name, p in sub.choices.items() if not (p.description or "").strip()]
    assert not missing, f"give these a description in --help: {missing}"
    assert "1 when the search ends undecided" in sub.choices["bisect"].format_help().replace("\n", " ")
