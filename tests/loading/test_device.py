"""core/loading/device.py on a machine without a GPU: which device "auto" picks when CUDA or MPS is there (their
availability stubbed), the --device choice checked at start, exact float32 on CUDA, the badge's label, and
one_cpu_thread leaving GPU work alone.

Every test puts back what it changes: the module's chosen device, torch's TF32 switch and its thread count."""
import pytest
import torch

from core.loading import device


@pytest.fixture
def fresh_choice(monkeypatch):
    """No device chosen yet; the module's own choice and cuDNN's TF32 switch are put back afterwards."""
    monkeypatch.setattr(device, "_device", None)
    monkeypatch.setattr(device, "_choice", None)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    monkeypatch.delenv("PLM_DEVICE", raising=False)


def _gpus(monkeypatch, cuda: bool, mps: bool) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(device, "_mps_available", lambda: mps)


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (True, False, "cuda"),
                                                 (False, True, "mps"), (False, False, "cpu")])
def test_auto_prefers_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    _gpus(monkeypatch, cuda, mps)
    assert device.resolve_device("auto") == torch.device(expected)
    assert device.resolve_device(None) == torch.device(expected)  # nothing chosen means "auto"


def test_an_explicit_gpu_that_is_missing_is_an_error_and_one_that_is_there_is_used(monkeypatch):
    _gpus(monkeypatch, cuda=False, mps=False)
    with pytest.raises(ValueError, match="no MPS backend"):
        device.resolve_device("MPS")  # the choice is read case-blind
    _gpus(monkeypatch, cuda=False, mps=True)
    assert device.resolve_device("mps") == torch.device("mps")
    with pytest.raises(ValueError, match="no CUDA"):
        device.resolve_device("cuda")


def test_choosing_cpu_wins_over_the_environment_and_resolves_on_first_use(monkeypatch, fresh_choice):
    """--device cpu is only remembered at start; the first model resolves it, ignoring PLM_DEVICE."""
    _gpus(monkeypatch, cuda=False, mps=False)
    monkeypatch.setenv("PLM_DEVICE", "cuda")  # would be an error if it were read
    device.choose_device("cpu")
    assert (device._choice, device._device) == ("cpu", None)
    assert device.get_device() == torch.device("cpu")
    assert device.device_label() == "cpu"
    with pytest.raises(ValueError, match="one of"):
        device.choose_device("tpu")


def test_choosing_a_missing_gpu_stops_the_start_at_once(monkeypatch, fresh_choice):
    _gpus(monkeypatch, cuda=False, mps=False)
    for choice in ("cuda", "mps"):
        with pytest.raises(ValueError, match="was asked for"):
            device.choose_device(choice)
    assert device._device is None  # nothing was fixed


def test_choosing_cuda_fixes_it_now_turns_tf32_off_and_labels_the_gpu(monkeypatch, fresh_choice):
    _gpus(monkeypatch, cuda=True, mps=False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "Stub GPU")
    device.choose_device("cuda")
    assert device._device == torch.device("cuda") and device.get_device() == torch.device("cuda")
    assert torch.backends.cudnn.allow_tf32 is False  # exact float32 LSTMs and convolutions
    assert device.device_label() == "cuda (Stub GPU)"


def test_set_device_to_cpu_leaves_tf32_alone(monkeypatch, fresh_choice):
    _gpus(monkeypatch, cuda=True, mps=False)
    assert device.set_device("cpu") == torch.device("cpu") == device.get_device()
    assert torch.backends.cudnn.allow_tf32 is True
