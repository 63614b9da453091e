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
