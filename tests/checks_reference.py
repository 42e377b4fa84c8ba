"""Shared by the tests of the "Your turn" checks (issue #51): a check's live answer, and a shipped model's files
with noise added (the perturbed models the answers must follow)."""
import shutil

import torch

from core.checks import get

STEPS = 32  # integrated gradients' steps in the Why views (core.why.attribution.DEFAULT_STEPS)


def answer(slug, own_text=None):
    found = get(slug).answer(own_text)
    assert found.missing is None
    return found


def noisy_copy(source, folder, seed, scale=0.5):
    """The files of a shipped model with Gaussian noise (scale × each tensor's std) added to every float weight."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, folder, dirs_exist_ok=True)
    generator = torch.Generator().manual_seed(seed)
    for path in folder.glob("*.safetensors"):
        state = load_file(str(path))
        for name, tensor in state.items():
            if tensor.is_floating_point() and tensor.numel() > 1:
                noise = torch.randn(tensor.shape, generator=generator) * float(tensor.float().std()) * scale
                state[name] = (tensor.float() + noise).to(tensor.dtype).contiguous()
        save_file(state, str(path))
    return folder
