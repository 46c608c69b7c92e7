"""Writing figures: PNG files written atomically and marked as spare-mc's (:data:`FIGURE_MARK`), never over a file
spare-mc did not write unless forced; the folder the sweep figures go into; a study's figure as a PNG."""

from __future__ import annotations

import os

from PIL import Image

from .._lib.validation import UsageValueError
from .._lib.version import __version__
from ..sweep.storage import atomic_write, check_regular_target

__all__ = ["FIGURE_MARK"]


#: Extensions that make an ``outdir`` look like a figure's file name rather than a folder.
_IMAGE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def as_outdir(outdir) -> str:
    """The folder the figures go into: a non-empty path that is a folder or does not exist yet, and not a figure's
    file name (each figure is ``<name>.png`` inside it; `--out fig.png` would have made a folder ``fig.png``)."""

    if not isinstance(outdir, (str, os.PathLike)) or isinstance(outdir, bytes) or not os.fspath(outdir):
        raise UsageValueError(f"`outdir` must be a folder path, got {outdir!r}")
    outdir = os.fspath(outdir)
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise UsageValueError(f"`outdir` {outdir} is a file, not a folder: the figures go into a folder, each as "
                              f"<name>.png")
    if not os.path.exists(outdir) and outdir.lower().endswith(_IMAGE_SUFFIXES):
        raise UsageValueError(f"`outdir` is the folder the figures go into (each as <name>.png), got {outdir!r}, a "
                              f"figure's file name: give a folder")
    return outdir


def save_png(fig, path) -> None:
    """Write ``fig`` as a PNG atomically, marked as spare-mc's (PNG text "Software"), and close it."""
    import matplotlib.pyplot as plt


    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png",
                                                    metadata={"Software": f"{FIGURE_MARK} {__version__}"}))
    finally:
        plt.close(fig)


#: The PNG "Software" text of every figure spare-mc writes: what it may overwrite without ``force``.
FIGURE_MARK = "spare-mc"


def check_figure_target(path, force):
    """Refuse to replace a file that is not a figure spare-mc wrote (unless ``force``), and anything not regular."""


    check_regular_target(path, "figure")
    if force or not os.path.exists(path):
        return
    try:

        with Image.open(path) as im:
            ours = str(im.info.get("Software", "")).startswith(FIGURE_MARK)
    except Exception:  # noqa: BLE001 - not an image at all
        ours = False
    if not ours:
        raise UsageValueError(f"{path} exists and is not a figure written by spare-mc; refusing to replace it (pass "
                              f"force=True, or choose another folder)")


def save_study_figure(draw, result, path, force: bool) -> str:
    """Write ``draw(result)`` as a PNG to ``path`` (atomically; a file spare-mc did not write is kept unless
    ``force``): the figure of a study (sensitivity, dynamic checkpointing, repair). Returns the path."""
    path = os.fspath(path)
    if not path.lower().endswith(".png"):
        raise UsageValueError(f"the figure path must end in .png (the figure is a PNG), got {path!r}")
    check_figure_target(path, force)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    save_png(draw(result), path)
    return path
