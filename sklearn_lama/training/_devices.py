"""Devices and precisions: checked before any work, and where tensors go."""

import warnings

import torch

__all__ = ["check_device", "check_precision", "loading_device", "run_precision", "to_device"]


def check_device(device):
    """``device`` as a ``torch.device`` that exists here, or a ValueError."""
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {device!r}."
        ) from None
    # Only the device asked for is queried: asking CUDA initialises it in this process.
    available = {
        "cpu": lambda: True,
        "cuda": torch.cuda.is_available,
        "mps": torch.backends.mps.is_available,
    }
    if resolved.type not in available:
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {device!r}."
        )
    if not available[resolved.type]():
        check = (
            "torch.cuda.is_available()"
            if resolved.type == "cuda"
            else ("torch.backends.mps.is_available()")
        )
        raise ValueError(
            f"device={device!r} was requested but {resolved.type.upper()} is not available "
            f"on this machine ({check} is False); use device='cpu'."
        )
    return resolved


def check_precision(precision, device):
    """Refuse a precision that ``device`` cannot run, before any work."""
    if precision == "16-mixed" and device.type != "cuda":
        raise ValueError(
            f"precision='16-mixed' needs a CUDA device (float16 autocast with gradient "
            f"scaling), got device={str(device)!r}; on the CPU use precision='bf16' or '32'."
        )
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError(
            f"precision='bf16' was requested but the GPU of device={str(device)!r} does not "
            "support bfloat16; use precision='16-mixed' or '32'."
        )


def loading_device(device, owner):
    """The device a loaded estimator runs on: its own, or the CPU (with a warning) when absent.

    ``device`` is the estimator's ``device`` parameter, ``owner`` its class name.
    """
    try:
        return check_device(device)
    except ValueError:
        warnings.warn(
            f"{owner} was saved with device={device!r}, which is "
            "not available here; it is loaded on the CPU.",
            UserWarning,
            stacklevel=4,
        )
        return torch.device("cpu")


def run_precision(precision, device):
    """The precision a net runs in: "16-mixed" where CUDA is missing (a loaded model) is "32"."""
    return "32" if precision == "16-mixed" and device.type != "cuda" else precision


def to_device(tensor, device):
    """``tensor`` on ``device``; a copy to CUDA does not block (its source is pinned)."""
    device = torch.device(device)
    return tensor.to(device, non_blocking=device.type == "cuda")
