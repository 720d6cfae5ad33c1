"""Build helpers for dpfair's documentation (imported by ``docs/conf.py``).

* :func:`write_api_pages` writes one autosummary page per public subpackage, listing every name
  in its ``__all__`` (so a name added to ``__all__`` appears in the API reference without editing
  the docs); autosummary then writes the per-object stubs next to it.  Both are generated into
  ``docs/api/generated/`` (git-ignored) on every build.
* :func:`contributing_to_rst` turns ``CONTRIBUTING.md`` (the single source of the estimator
  contract) into reStructuredText, so the docs need no Markdown parser.
* :func:`draw_layers` draws the architecture page's picture from ``dpfair._layout`` at build time.
* :func:`gallery_guard` is a sphinx-gallery ``reset_modules`` hook: it times every example (an
  example over :data:`EXAMPLE_TIME_LIMIT_S` seconds is a build warning, so an error under ``-W``)
  and refuses network connections while an example runs.
"""

from __future__ import annotations

import importlib
import inspect
import ipaddress
import re
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from sphinx.util import logging

from dpfair import _layout

logger = logging.getLogger("dpfair_docs")

#: The public subpackages documented in the API reference, in reading order (declared in ``dpfair._layout``).
API_PACKAGES = _layout.api_packages()

#: Every gallery example must finish within this many seconds (CONTRIBUTING.md, rule 13).
EXAMPLE_TIME_LIMIT_S = 20.0

#: Wall time of every example executed in this build, by file name.
EXAMPLE_TIMES: dict[str, float] = {}


# --------------------------------------------------------------------------- API reference
def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "Exceptions and warnings" if issubclass(obj, BaseException) else "Classes"
    if callable(obj):
        return "Functions"
    return "Data"


_KIND_ORDER = ("Classes", "Functions", "Exceptions and warnings", "Data")


def write_api_pages(out_dir: Path, packages: tuple[str, ...] = API_PACKAGES) -> list[str]:
    """Write ``<out_dir>/<package>.rst`` for each package; return the page names (for a toctree).

    The folder is emptied first, so names removed from ``__all__`` leave no stale stub behind.
    """
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    pages = []
    for name in packages:
        module = importlib.import_module(name)
        public = getattr(module, "__all__", None)
        if public is None:
            raise RuntimeError(f"{name} has no __all__: the API reference lists exactly the names in __all__.")
        groups: dict[str, list[str]] = {}
        for item in sorted(public, key=str.lower):
            groups.setdefault(_kind(getattr(module, item)), []).append(item)
        lines = [name, "=" * len(name), "", f".. automodule:: {name}", "   :no-members:", "", f".. currentmodule:: {name}", ""]
        for kind in _KIND_ORDER:
            if kind not in groups:
                continue
            lines += [kind, "-" * len(kind), "", ".. autosummary::", "   :toctree: .", ""]
            lines += [f"   {item}" for item in groups[kind]]
            lines.append("")
        (out_dir / f"{name}.rst").write_text("\n".join(lines), encoding="utf-8")
        pages.append(name)
    # the toctree of api/index.rst (included from there; ".inc" is not a source suffix)
    toctree = [".. toctree::", "   :maxdepth: 1", ""] + [f"   {out_dir.name}/{page}" for page in pages]
    (out_dir / "packages.inc").write_text("\n".join(toctree) + "\n", encoding="utf-8")
    return pages


_REQUEST_METHOD = re.compile(r"^set_\w+_request$")


def skip_member(app: Any, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """``autodoc-skip-member``: leave out scikit-learn's generated ``set_*_request`` methods.

    scikit-learn attaches them to every estimator with metadata routing; their docstrings point
    at scikit-learn's own glossary.  The user guide explains routing ``sensitive_features``.
    """
    if _REQUEST_METHOD.match(name):
        return True
    return None


_BARS = re.compile(r"(?<![\\|])\|(?=[^\s|])([^|`]*?[^\s|\\])\|(?![|_])")


def escape_docstring_bars(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """``autodoc-process-docstring``: read ``|x|`` in dpfair docstrings as an absolute value.

    Docstrings write ``|gamma(epsilon)| <= gamma_max``; reStructuredText would take ``|...|`` for
    an (undefined) substitution.  dpfair never uses substitutions in docstrings, so the bars are
    escaped.  Tables and line blocks (lines starting with ``|`` or ``+``) are left alone.
    """
    if not name.startswith("dpfair"):
        return
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("|", "+")):
            continue
        parts = re.split(r"(`+[^`]*`+)", line)  # leave inline literals and roles alone
        lines[i] = "".join(p if j % 2 else _BARS.sub(r"\\|\1\\|", p) for j, p in enumerate(parts))


# --------------------------------------------------------------------------- CONTRIBUTING.md
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_UNDERLINES = {1: "=", 2: "-", 3: "~", 4: "^", 5: '"', 6: "'"}


def _inline(text: str) -> str:
    """Markdown inline markup to RST: `code`, **bold**, *emphasis* (same in both), [text](url)."""
    parts = re.split(r"(`[^`]+`)", text)
    out = ""
    for i, part in enumerate(parts):
        if i % 2 == 1:  # a code span
            before = "\\ " if out and re.match(r"\w", out[-1]) else ""
            nxt = parts[i + 1] if i + 1 < len(parts) else ""
            after = "\\ " if nxt and re.match(r"\w", nxt[0]) else ""
            out += f"{before}``{part[1:-1]}``{after}"
        else:
            out += re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"`\1 <\2>`__", part)
    return out


_ITEM = re.compile(r"^(\d+\.|[*-])\s+")


def contributing_to_rst(markdown: str, *, heading_offset: int = 0) -> str:
    """Convert the Markdown subset used by ``CONTRIBUTING.md`` to reStructuredText.

    Handles ATX headings, paragraphs, ``1.``/``*``/``-`` lists with indented continuation lines
    and nested lists, fenced code blocks and inline markup.  ``heading_offset`` demotes headings.
    """
    out: list[str] = []
    in_code = False
    item_indent: int | None = None  # indent of the last list item, None outside lists
    for raw in markdown.splitlines():
        line = raw.rstrip()
        if line.startswith("```"):
            if not in_code:
                out += ["", ".. code-block:: " + (line[3:].strip() or "text"), ""]
            else:
                out.append("")
            in_code = not in_code
            item_indent = None
            continue
        if in_code:
            out.append("   " + line if line else "")
            continue
        heading = _HEADING.match(line)
        if heading:
            level = min(len(heading.group(1)) + heading_offset, 6)
            title = _inline(heading.group(2).strip())
            out += ["", title, _UNDERLINES[level] * len(title), ""]
            item_indent = None
            continue
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if not stripped:
            out.append("")
            item_indent = None
            continue
        item = _ITEM.match(stripped)
        if item:
            # a list, a nested list, or the return to an outer list starts after a blank line
            if out and out[-1] != "" and indent != item_indent:
                out.append("")
            item_indent = indent
            bullet = item.group(1)
            marker = "* " if bullet in ("*", "-") else bullet + " "
            out.append(" " * indent + marker + _inline(stripped[item.end() :]))
            continue
        out.append(" " * indent + _inline(stripped))
    return "\n".join(out).strip() + "\n"


# --------------------------------------------------------------------------- the layer picture
def draw_layers() -> Any:
    """Draw the layers of ``dpfair._layout`` (the architecture page's picture), lowest at the bottom.

    Each band is a layer, each box a unit of it; a unit imports only units of its own band or lower ones
    (``tests/test_import_boundaries.py`` checks it against the same table).  Drawn with matplotlib at build
    time, so the picture needs no external tool and cannot drift from the table.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (the plot directive saves it).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    layers = _layout.layers()
    fig, ax = plt.subplots(figsize=(9.0, 0.62 * len(layers) + 0.4))
    left, width, band = 3.25, 6.65, 1.0
    for level, units in enumerate(layers):
        y = level * band
        ax.add_patch(FancyBboxPatch((0.05, y + 0.08), 9.85, band - 0.16, boxstyle="round,pad=0,rounding_size=0.08",
                                    facecolor="#eef2f7" if level % 2 else "#f7f7f2", edgecolor="none"))
        ax.text(0.15, y + band / 2, f"{level}  {_layout.LAYER_NAMES[level]}", va="center", ha="left", fontsize=7.5,
                color="#444444")
        names = sorted(units, key=lambda m: (m.partition(".")[2].startswith("_"), m))
        step = width / max(len(names), 1)
        for i, module in enumerate(names):
            label = module.partition(".")[2] or "dpfair"
            private = label.startswith("_") or module in ("dpfair.cli", "dpfair.cli_assess")
            cx = left + step * (i + 0.5)
            ax.add_patch(FancyBboxPatch((cx - step / 2 + 0.06, y + 0.2), step - 0.12, band - 0.4,
                                        boxstyle="round,pad=0,rounding_size=0.06",
                                        facecolor="white" if private else "#d6e4f0", edgecolor="#4a6a8a", lw=0.8))
            # the largest monospace size (a glyph is 0.6 em wide) at which the longest label fits its box
            longest = max(len(m.partition(".")[2] or "dpfair") for m in names)
            box_pt = (step - 0.2) * fig.get_figwidth() / 10.4 * 72
            ax.text(cx, y + band / 2, label, va="center", ha="center", fontsize=min(7.5, box_pt / (0.6 * longest)),
                    family="monospace")
    ax.add_patch(FancyArrowPatch((9.97, len(layers) * band - 0.3), (9.97, 0.3), arrowstyle="-|>", mutation_scale=10,
                                 color="#4a6a8a", lw=1.0))
    ax.text(10.05, len(layers) * band / 2, "imports run down", rotation=270, va="center", ha="left", fontsize=7.5,
            color="#4a6a8a")
    ax.set_xlim(0, 10.4)
    ax.set_ylim(0, len(layers) * band)
    ax.axis("off")
    fig.tight_layout(pad=0.2)
    return fig


# --------------------------------------------------------------------------- gallery guard
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX paths
        return True
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if not _is_local(address):
        raise OSError(f"gallery examples must not use the network (tried to connect to {address!r}).")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if not _is_local(address):
        raise OSError(f"gallery examples must not use the network (tried to connect to {address!r}).")
    return _real_connect_ex(self, address)


_started: dict[str, float] = {}


def gallery_guard(gallery_conf: dict, fname: Any, when: str) -> None:
    """sphinx-gallery ``reset_modules`` hook: no network, and at most 20 s per example."""
    if fname is None:
        return
    name = Path(str(fname)).name
    if when == "before":
        socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
        _started[name] = time.perf_counter()
        return
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]
    if name in _started:
        elapsed = time.perf_counter() - _started.pop(name)
        EXAMPLE_TIMES[name] = elapsed
        if elapsed > EXAMPLE_TIME_LIMIT_S:
            logger.warning(
                "gallery example %s took %.1f s, over the %.0f s limit (CONTRIBUTING.md, rule 13): "
                "use a smaller problem or fewer repetitions.",
                name,
                elapsed,
                EXAMPLE_TIME_LIMIT_S,
            )


def report_example_times(app: Any, exception: Exception | None) -> None:
    """``build-finished`` handler: log each example's wall time."""
    for name, elapsed in sorted(EXAMPLE_TIMES.items(), key=lambda kv: -kv[1]):
        logger.info("gallery example %s: %.2f s", name, elapsed)
