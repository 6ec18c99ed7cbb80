"""Pictures of a File with matplotlib (``pip install colfile[plot]``):
per-chunk minimum/maximum bands of a column along its rows, histograms, and
the bandwidth of each ``iosim`` phase, and of a sweep of ``iosim`` runs over
rank counts, loads and modes.  Each function returns a
:class:`matplotlib.figure.Figure` drawn with the Agg backend (no display
needed); :func:`save` writes it to a file.  :func:`text_histogram` draws a
histogram as text for a terminal and needs nothing more than numpy.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["stats_figure", "histogram_figure", "iosim_figure", "sweep_figure", "save",
           "text_histogram"]


def _figure() -> Any:
    """A new Figure on the Agg canvas (pyplot is not involved, so no GUI
    backend is ever chosen and no global state is kept)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(f"plotting needs matplotlib ({exc}); pip install colfile[plot]") \
            from None
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Any, path: str) -> None:
    """Write ``fig`` to ``path`` (the format from its suffix: .png, .pdf,
    .svg)."""
    fig.savefig(path, dpi=100)


def stats_figure(column: Any, component: int | None = None) -> Any:
    """The per-chunk minimum and maximum of ``column`` (a
    :class:`colfile.Column` with statistics) as a band along its rows,
    one band per component (or only ``component``).  Chunks without
    statistics leave a gap.  x: ``row``; y: the column's name."""
    nmemb = max(column.nmemb, 1)
    comps = [component % nmemb] if component is not None else list(range(nmemb))
    fig = _figure()
    ax = fig.add_subplot()
    for j in comps:
        st = column.chunk_stats(j)
        ok = st["valid"] & (st["rows"] > 0)
        xs: list[float] = []
        lo: list[float] = []
        hi: list[float] = []
        for rec, good in zip(st, ok):
            first, rows = float(rec["first_row"]), float(rec["rows"])
            if good:
                xs += [first, first + rows]
                lo += [float(rec["min"])] * 2
                hi += [float(rec["max"])] * 2
            else:  # a gap where nothing is known
                xs.append(first)
                lo.append(np.nan)
                hi.append(np.nan)
        label = f"component {j}" if nmemb > 1 else "min..max per chunk"
        ax.fill_between(xs, lo, hi, step=None, alpha=0.5, label=label, linewidth=0.8)
    ax.set_xlabel("row")
    ax.set_ylabel(column.name)
    ax.set_title(f"{column.name}: minimum and maximum of each chunk")
    ax.set_xlim(0, max(column.size, 1))
    ax.legend(loc="best", fontsize="small")
    return fig


def histogram_figure(counts: np.ndarray, edges: np.ndarray, xlabel: str,
                     title: str | None = None) -> Any:
    """A histogram of ``counts`` over ``edges`` (``numpy.histogram``'s
    pair).  x: ``xlabel``; y: ``count``."""
    fig = _figure()
    ax = fig.add_subplot()
    ax.stairs(np.asarray(counts), np.asarray(edges, dtype=float), fill=True)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    if title:
        ax.set_title(title)
    return fig


#: The phases of an iosim report and their keys (seconds, GB/s or None).
IOSIM_PHASES = (("create", "create_seconds", None),
                ("write", "write_seconds", "write_GBps"),
                ("write data", "write_data_seconds", None),
                ("read", "read_seconds", "read_GBps"))


def iosim_figure(report: dict[str, Any]) -> Any:
    """The bandwidth (decimal GB/s) of each phase of one ``colfile iosim``
    report (its ``--json`` object): a bar per phase that moves data, with
    its time written on it.  x: ``phase``; y: ``bandwidth (GB/s)``."""
    fig = _figure()
    ax = fig.add_subplot()
    names: list[str] = []
    rates: list[float] = []
    notes: list[str] = []
    nbytes = float(report["bytes"])
    for name, seconds_key, _ in IOSIM_PHASES:
        if name == "create":
            continue  # moves no data: its time is in the title
        seconds = float(report[seconds_key])
        names.append(name)
        rates.append(nbytes / seconds / 1e9 if seconds > 0 else 0.0)
        notes.append(f"{seconds:.4g} s")
    bars = ax.bar(names, rates, color=["tab:blue", "tab:cyan", "tab:orange"])
    ax.bar_label(bars, notes)
    ax.set_xlabel("phase")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_title(f"colfile iosim: {report['ranks']} ranks, {nbytes / 1e9:.3g} GB, "
                 f"mode {report['mode_used']}, nfile {report['nfile']}, "
                 f"create {float(report['create_seconds']):.3g} s")
    return fig


def sweep_figure(results: dict[tuple[str, int, str, str], dict[str, Any]],
                 phase: str = "write") -> Any:
    """Bandwidth (decimal GB/s) of one phase (``"write"`` or ``"read"``)
    against the number of ranks, one panel per load, one line per layer and
    mode: ``results`` maps ``(load, ranks, layer, mode)`` to an iosim
    ``--json`` report (``bench/iosim_sweep.py`` measures them).  x of each
    panel: ``ranks``; y: ``<phase> bandwidth (GB/s)``."""
    if phase not in ("write", "read"):
        raise ValueError(f"phase must be 'write' or 'read', not {phase!r}")
    if not results:
        raise ValueError("no iosim results to draw")
    loads = list(dict.fromkeys(key[0] for key in results))
    fig = _figure()
    axes = fig.subplots(1, len(loads), squeeze=False)[0]
    for ax, load in zip(axes, loads):
        lines: dict[tuple[str, str], list[tuple[int, float]]] = {}
        for (lo, n, layer, mode), report in results.items():
            if lo == load:
                lines.setdefault((layer, mode), []).append((n, float(report[f"{phase}_GBps"])))
        for (layer, mode), points in lines.items():
            points.sort()
            ax.plot([n for n, _ in points], [v for _, v in points], marker="o",
                    label=f"{layer} {mode}")
        ax.set_xscale("log", base=2)
        ranks = sorted({key[1] for key in results if key[0] == load})
        ax.set_xticks(ranks, [str(n) for n in ranks])
        ax.minorticks_off()
        ax.set_xlabel("ranks")
        ax.set_ylabel(f"{phase} bandwidth (GB/s)")
        ax.set_title(f"load {load}")
        ax.set_ylim(bottom=0)
    axes[-1].legend(fontsize="small")
    return fig


def text_histogram(counts: Sequence[int], edges: Sequence[float], width: int = 50,
                   fmt: str = "{:.6g}") -> str:
    """A histogram as lines of text, one per bin: ``[lo, hi)  count  ####``,
    the longest bar ``width`` characters (the last bin is closed, as in
    ``numpy.histogram``)."""
    counts = [int(c) for c in counts]
    top = max(counts) if counts else 0
    lows = [fmt.format(float(e)) for e in edges[:-1]]
    highs = [fmt.format(float(e)) for e in edges[1:]]
    wl = max((len(s) for s in lows), default=0)
    wh = max((len(s) for s in highs), default=0)
    wc = max((len(str(c)) for c in counts), default=1)
    lines = []
    for i, c in enumerate(counts):
        close = "]" if i == len(counts) - 1 else ")"
        bar = "#" * (round(width * c / top) if top else 0)
        if c and not bar:
            bar = "."  # a bin that holds something is never blank
        lines.append(f"[{lows[i].rjust(wl)}, {highs[i].rjust(wh)}{close}  "
                     f"{str(c).rjust(wc)}  {bar}".rstrip())
    return "\n".join(lines) + ("\n" if lines else "")
