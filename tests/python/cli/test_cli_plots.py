"""Pictures: colfile stats --plot, colfile query --hist / --plot, colfile
iosim --plot and the colfile.plots functions behind them.  Each plot is
rendered to a PNG, which must be a real, non-blank image, and the figure's
axes carry the expected labels (read before saving)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import colfile

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402

from colfile import plots  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def _is_picture(path) -> None:
    with open(path, "rb") as fh:
        assert fh.read(8) == PNG
    assert os.path.getsize(path) > 2000
    img = imread(str(path))
    assert img.shape[0] > 100 and img.shape[1] > 100
    assert float(img[..., :3].std()) > 0.01  # something is drawn on it


def _labels(fig):
    ax = fig.axes[0]
    return ax.get_xlabel(), ax.get_ylabel()


@pytest.fixture()
def cat(tmp_path):
    p = str(tmp_path / "cat")
    rng = np.random.default_rng(1)
    with colfile.File(p, "w") as f:
        f.create("1/Mass", "<f8", data=np.concatenate([rng.normal(5, 1, 3000),
                                                       rng.normal(9, 0.5, 1000)]),
                 nfile=4, chunk_rows=256)
        f.create("1/Pos", ("<f4", 3), data=rng.random((4000, 3)).astype("<f4"),
                 chunk_rows=512)
        f.create("1/ID", "<i8", data=np.arange(4000))
        f.create("1/Name", "S3", data=np.array([b"a"] * 4000))
    return p


def test_stats_figure_and_cli(cli, cat, tmp_path):
    with colfile.File(cat) as f:
        fig = plots.stats_figure(f["1/Mass"])
        assert _labels(fig) == ("row", "1/Mass")
        # the band covers every chunk's min..max
        st = f["1/Mass"].chunk_stats(0)
        lo, hi = fig.axes[0].get_ylim()
        assert lo <= st["min"].min() and hi >= st["max"].max()
        vec = plots.stats_figure(f["1/Pos"])
        assert _labels(vec) == ("row", "1/Pos")
        assert [t.get_text() for t in vec.axes[0].get_legend().get_texts()] == \
            ["component 0", "component 1", "component 2"]
    out = tmp_path / "mass.png"
    status, text, err = cli("stats", cat, "1/Mass", "--plot", str(out))
    assert status == 0 and err == "" and "1/Mass" in text
    _is_picture(out)
    status, _, err = cli("stats", cat, "1/Pos", "--component", "1", "--plot",
                         str(tmp_path / "pos.png"))
    assert status == 0
    _is_picture(tmp_path / "pos.png")


def test_stats_plot_errors(cli, cat, tmp_path):
    status, out, err = cli("stats", cat, "1/", "--plot", str(tmp_path / "g.png"))
    assert status == 2 and "--plot draws one column" in err and err.count("\n") == 1
    bad = tmp_path / "nodir" / "x.png"
    status, out, err = cli("stats", cat, "1/Mass", "--plot", str(bad))
    assert status == 1 and out == "" and str(bad) in err and "does not exist" in err
    status, out, err = cli("stats", cat, "1/Mass", "--plot", str(tmp_path / "x.unknownfmt"))
    assert status == 1 and "cannot write the picture" in err and err.count("\n") == 1
    assert not (tmp_path / "g.png").exists()


def test_query_hist_text_is_numpys_histogram(cli, cat):
    status, out, err = cli("query", cat, "-g", "1", "Mass > 6", "--hist", "--bins", "8")
    assert status == 0 and err == ""
    with colfile.File(cat) as f:
        m = f["1/Mass"][:]
    sel = m[m > 6]
    counts, edges = np.histogram(sel, bins=8, range=(sel.min(), sel.max()))
    lines = out.splitlines()
    assert lines[0] == f"1/Mass: {len(sel)} values where Mass > 6"
    assert len(lines) == 9
    parsed = [int(line.split()[2]) for line in lines[1:]]
    assert parsed == counts.tolist(), out
    assert lines[-1].split("]")[0].endswith(f"{edges[-1]:.6g}")  # the last bin is closed
    longest = max(len(line.split()[-1]) for line in lines[1:])
    assert longest == 50
    status, out, _ = cli("query", cat, "-g", "1", "Mass > 6", "-c", "Mass", "--hist",
                         "--bins", "8", "--json")
    doc = json.loads(out)
    assert doc["counts"] == counts.tolist() and doc["values"] == len(sel)
    assert doc["edges"] == edges.tolist()


def test_query_plot(cli, cat, tmp_path):
    with colfile.File(cat) as f:
        m = f["1/Mass"][:]
    counts, edges = np.histogram(m, bins=10)
    fig = plots.histogram_figure(counts, edges, "Mass", "Mass where ID >= 0")
    assert _labels(fig) == ("Mass", "count")
    assert fig.axes[0].get_title() == "Mass where ID >= 0"
    out = tmp_path / "h.png"
    status, text, err = cli("query", cat, "-g", "1", "ID >= 0", "-c", "Mass", "--plot", str(out))
    assert (status, text, err) == (0, "", "")
    _is_picture(out)


def test_query_hist_errors(cli, cat):
    for extra, words in ((["-c", "Pos"], "3 components"), (["-c", "Name"], "needs numbers"),
                         (["-c", "Mass,ID"], "one column"), (["--bins", "0"], "--bins"),
                         (["--count"], "do not apply")):
        status, out, err = cli("query", cat, "-g", "1", "ID < 5", "--hist", *extra)
        assert status == 2 and out == "" and words in err, (extra, err)
        assert err.count("\n") == 2 or err.count("\n") == 1, err


def test_text_histogram_shapes():
    text = plots.text_histogram([0, 5, 10, 1], [0.0, 1.0, 2.0, 3.0, 4.0], width=10)
    assert text.splitlines() == ["[0, 1)   0", "[1, 2)   5  #####",
                                 "[2, 3)  10  ##########", "[3, 4]   1  #"]
    assert plots.text_histogram([1, 1000], [0, 1, 2], width=10).splitlines()[0].endswith(".")


def test_iosim_plot(cli, tmp_path):
    report = {"ranks": 4, "bytes": 4 << 20, "mode_used": "throttled", "nfile": 4,
              "create_seconds": 0.01, "write_seconds": 0.02, "write_data_seconds": 0.01,
              "read_seconds": 0.004}
    fig = plots.iosim_figure(report)
    assert _labels(fig) == ("phase", "bandwidth (GB/s)")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["write", "write data", "read"]
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([(4 << 20) / 0.02 / 1e9, (4 << 20) / 0.01 / 1e9,
                                     (4 << 20) / 0.004 / 1e9])
    out = tmp_path / "iosim.png"
    status, text, err = cli("iosim", str(tmp_path / "sim"), "--load", "small", "--plot", str(out))
    assert status == 0, err
    assert "write" in text
    _is_picture(out)


def test_sweep_figure_draws_every_configuration(tmp_path):
    """bench/iosim_sweep.py --plot: bandwidth against ranks, a panel per
    load, a line per layer and mode, each point the report's figure."""
    results = {}
    for load in ("small", "large"):
        for n in (1, 2, 4):
            for layer in ("C", "Python"):
                for mode in ("throttled", "aggregated"):
                    results[(load, n, layer, mode)] = {"write_GBps": n * 0.5 + (mode == "aggregated"),
                                                       "read_GBps": n * 2.0}
    fig = plots.sweep_figure(results, "write")
    axes = fig.get_axes()
    assert [ax.get_title() for ax in axes] == ["load small", "load large"]
    for ax in axes:
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("ranks", "write bandwidth (GB/s)")
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert sorted(lines) == ["C aggregated", "C throttled", "Python aggregated",
                                 "Python throttled"]
        assert list(lines["C aggregated"].get_xdata()) == [1, 2, 4]
        assert list(lines["C aggregated"].get_ydata()) == [1.5, 2.0, 3.0]
    read = plots.sweep_figure(results, "read")
    assert read.get_axes()[0].get_ylabel() == "read bandwidth (GB/s)"
    path = tmp_path / "sweep.png"
    plots.save(fig, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
    with pytest.raises(ValueError, match="phase must be"):
        plots.sweep_figure(results, "create")
    with pytest.raises(ValueError, match="no iosim results"):
        plots.sweep_figure({}, "write")
