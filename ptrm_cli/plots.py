"""PNG plots of an eval report (matplotlib, imported only here and only when plotting).

    width_scaling.png   pass@k, best-Q@k, mode@k, verified@k against k (log axis), from the
                        first sigma's runs subsampled to every k <= K; deterministic TRM dashed
    sigma_sweep.png     the same metrics at K against sigma (only with two or more sigmas); the
                        shaded band between pass@K and best-Q@K is the verifier's headroom
    q_steps.png         sigmoid(Q) over supervision steps for rollouts that end correct vs
                        incorrect (mean, 25-75% band), and their cell accuracy

Correct means by the rules verifier, the judgment the tables lead with (the y axes say so;
reports written before 2026-11-27 judged the width curve and Q over steps by label match).

Figures are built with `matplotlib.figure.Figure` directly (no pyplot, no global backend), so
plotting works headless and never opens a window.
"""

from __future__ import annotations

from pathlib import Path

from .errors import PtrmError

COLORS = {"pass": "#1f77b4", "best_q": "#ff7f0e", "mode": "#2ca02c", "verified": "#9467bd",
          "q_vote": "#8c564b", "correct": "#2ca02c", "incorrect": "#d62728", "det": "#555555"}
#: verified@K lies on pass@K by the rules (and often by label): dashed, so both stay visible
STYLES = {"verified": "--"}
LABELS = {"pass": "pass@K", "best_q": "best-Q@K", "mode": "mode@K", "verified": "verified@K",
          "q_vote": "Q-vote@K"}
#: the y axis by judgment: the rules first, as the tables (reports before 2026-11-27 judged
#: the width curve and Q over steps by label match and name no judge)
YLABEL = {"rules": "% correct (rules verifier)", "label": "% correct (label match)"}


def _figure(w=6.0, h=4.0, ncols=1):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PtrmError("plots need matplotlib, which is not installed",
                        hint="pip install 'ptrm[plots]', or pass --no-plots") from None
    fig = Figure(figsize=(w, h), dpi=120, layout="constrained")
    return fig, fig.subplots(1, ncols)


def _title(report: dict, what: str) -> str:
    s = report["settings"]
    return f"{what} · {report['split']['name']} (n={report['split']['n']}), D={s['D']}" \
        f"{_halted(report)}"


def _halted(report: dict) -> str:
    """How answers were taken under --halt, as the tables' titles say it: a halted curve read
    as one at the last step would credit step D with answers found earlier."""
    halt = report["settings"].get("halt")
    return "" if halt is None else f", halted at sigmoid(Q) > {halt:g}"


def _on(report: dict) -> str:
    """" on y" where the noise was not on the paper's z (a y run's σ is not z's), as the
    tables say it."""
    target = report["settings"].get("perturb", "z")
    return "" if target == "z" else f" on {target}"


def width_scaling(report: dict, path: Path) -> Path:
    w = report["width_curve"]
    fig, ax = _figure()
    ks = w["ks"]
    for m in ("pass", "best_q", "mode", "verified"):
        if m not in w["metrics"]:
            continue
        mean = [100 * v for v in w["metrics"][m]["mean"]]
        std = [100 * v for v in w["metrics"][m]["std"]]
        ax.plot(ks, mean, marker="o", ms=3, color=COLORS[m], ls=STYLES.get(m, "-"),
                label=LABELS[m].replace("K", "k"))
        ax.fill_between(ks, [a - b for a, b in zip(mean, std)], [a + b for a, b in zip(mean, std)],
                        color=COLORS[m], alpha=0.15, lw=0)
    _trm_baseline(ax, report, w.get("judge", "label"), ls="--")
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.set_ylim(-2, 102)
    ax.set_xlabel("rollouts k (subsets of one run at K)")
    ax.set_ylabel(YLABEL[w.get("judge", "label")])
    ax.set_title(_title(report, f"width scaling, σ={w['sigma']:g}{_on(report)}"), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path)
    return path


def _trm_baseline(ax, report: dict, judge: str, *, ls: str) -> None:
    """The deterministic TRM at the same depth, as a horizontal line to compare against."""
    det = next((d for d in report["deterministic"] if d["D"] == report["settings"]["D"]), None)
    if det is not None:
        ax.axhline(100 * det["groups"]["aggregate"][judge]["acc"], ls=ls, color=COLORS["det"],
                   lw=1, label=f"TRM K=1 D={det['D']}")


def sigma_sweep(report: dict, path: Path) -> Path:
    judge = "rules"  # every report's summary holds both judgments
    runs = sorted(report["ptrm"], key=lambda r: r["sigma"])
    sig = [r["sigma"] for r in runs]
    fig, ax = _figure()
    series = {}
    for m in ("pass", "best_q", "mode", "verified"):
        mean = [100 * r["summary"]["aggregate"][judge][m]["mean"] for r in runs]
        std = [100 * r["summary"]["aggregate"][judge][m]["std"] for r in runs]
        series[m] = mean
        ax.errorbar(sig, mean, yerr=std, marker="o", ms=3, capsize=2, color=COLORS[m],
                    ls=STYLES.get(m, "-"), label=LABELS[m])
    ax.fill_between(sig, series["best_q"], series["pass"], color=COLORS["pass"], alpha=0.1, lw=0,
                    label="verifier headroom")
    _trm_baseline(ax, report, judge, ls=":")
    ax.set_ylim(-2, 102)
    ax.set_xlabel("σ (noise scale)")
    ax.set_ylabel(YLABEL[judge])
    ax.set_title(_title(report, f"σ sweep{_on(report)}, K={report['settings']['K']}"), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path)
    return path


def q_steps(report: dict, path: Path) -> Path:
    qs = report["q_steps"]
    steps = qs["steps"]
    fig, (ax, ax2) = _figure(9.0, 3.6, ncols=2)
    for name in ("correct", "incorrect"):
        d = qs[name]
        if not d.get("n"):
            continue
        label = f"{name} ({d['n']} rollouts)"  # n of the title counts puzzles
        ax.plot(steps, d["q_mean"], color=COLORS[name], label=label + ", mean and 25-75%")
        ax.fill_between(steps, d["q_p25"], d["q_p75"], color=COLORS[name], alpha=0.2, lw=0)
        ax2.plot(steps, [100 * v for v in d["cell_accuracy"]], color=COLORS[name], label=label)
    ax.set_xlabel("supervision step")
    ax.set_ylabel("sigmoid(Q)")
    ax.set_ylim(-0.02, 1.02)
    by = "the rules" if qs.get("judge") == "rules" else "label"
    # over both panels, on two lines: as one panel's title it ran past the figure's left edge
    fig.suptitle(_title(report, f"Q over steps, σ={qs['sigma']:g}{_on(report)}, seed "
                                f"{qs['seed']}") +
                 f"\nrollouts ending correct vs incorrect by {by}", fontsize=9)
    ax.set_title("confidence over steps", fontsize=9)
    ax2.set_ylim(-2, 102)
    ax2.set_xlabel("supervision step")
    ax2.set_ylabel("% cells correct")
    ax2.set_title("cell accuracy over steps (by label)", fontsize=9)
    from matplotlib.ticker import MaxNLocator

    for a in (ax, ax2):
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.savefig(path)
    return path


def write_all(report: dict, out_dir: Path) -> dict[str, str]:
    files = {"width_scaling": str(width_scaling(report, out_dir / "width_scaling.png"))}
    if len(report["ptrm"]) > 1:
        files["sigma_sweep"] = str(sigma_sweep(report, out_dir / "sigma_sweep.png"))
    if report.get("q_steps"):
        files["q_steps"] = str(q_steps(report, out_dir / "q_steps.png"))
    return files
