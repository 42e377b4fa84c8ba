"""nn.Module code only, one file per model family; submodule names equal checkpoint keys."""
