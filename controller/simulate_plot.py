"""`batchgate simulate --plot FILE.svg|.png`: each ClusterQueue's usage against its quota, step by step.

Drawn from what the simulation itself recorded in its step reports (the ClusterQueue figures at
the end of each step, and the admissions and preemptions of the step), so the picture and the
table can never disagree. One panel per ClusterQueue; in it one line per flavor and resource
(held from the end of one step to the end of the next), as a percentage of that resource's
nominal quota (so GPUs, cores and bytes share an axis), a line at 100 % for the nominal quota
and, where set, one for the borrowing limit. Admissions and preemptions are marked above the
step they happened in, with their count. matplotlib draws it
(its Figure alone, without pyplot: SVG through its SVG writer, PNG through Agg, no display
needed), imported only when a plot is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.simulation import ADMISSION, PREEMPTION, StepReport

FORMATS = (".svg", ".png")
MARK_STYLE = {ADMISSION: ("^", "tab:green", "admitted"), PREEMPTION: ("x", "tab:red", "preempted")}


class PlotError(ValueError):
    """A plot that cannot be written; the message says what to change."""


def check_path(path: str) -> Path:
    """The output path, refused before the simulation runs when its extension is not one we write,
    its directory does not exist, or matplotlib is not installed."""
    target = Path(path)
    if target.suffix.lower() not in FORMATS:
        raise PlotError(f"--plot: {path}: the file name must end in .svg or .png")
    if not target.parent.is_dir():
        raise PlotError(f"--plot: {path}: no such directory {str(target.parent)!r}")
    _figure_class()
    return target


def _figure_class() -> Any:
    try:
        from matplotlib.figure import Figure  # no pyplot: no GUI backend, nothing global
    except ImportError:
        raise PlotError("--plot needs matplotlib, which is not installed: pip install 'batchgate[plot]'") from None
    return Figure


@dataclass(frozen=True)
class Line:
    """One flavor and resource of a ClusterQueue: used % of nominal at each step."""

    label: str
    percent: list[float]
    borrowing_limit_percent: float | None


def queue_lines(reports: list[StepReport], queue: str) -> tuple[list[Line], list[str]]:
    """The lines of `queue`'s panel, and the flavor/resources that have no nominal quota to be a
    percentage of (named in the panel instead of drawn)."""
    resources: dict[tuple[str, str], list[float]] = {}
    limits: dict[tuple[str, str], float | None] = {}
    unmeasured: set[str] = set()
    for step, report in enumerate(reports):
        for figures in report.queues:
            if figures.name != queue:
                continue
            for (flavor, resource), values in figures.resources.items():
                if values.nominal <= 0:
                    unmeasured.add(f"{flavor}/{resource}")
                    continue
                series = resources.setdefault((flavor, resource), [float("nan")] * len(reports))
                series[step] = 100 * values.usage / values.nominal
                limits[(flavor, resource)] = (100 * (values.nominal + values.borrowing_limit) / values.nominal
                                              if values.borrowing_limit else None)
    lines = [Line(f"{flavor}/{resource}", series, limits[(flavor, resource)])
             for (flavor, resource), series in sorted(resources.items())]
    return lines, sorted(unmeasured - {line.label for line in lines})


def mark_counts(reports: list[StepReport], queue: str, kind: str) -> dict[int, int]:
    """step -> how many marks of `kind` the step has on `queue`."""
    counts: dict[int, int] = {}
    for step, report in enumerate(reports):
        n = sum(1 for mark in report.marks if mark.kind == kind and mark.cluster_queue == queue)
        if n:
            counts[step] = n
    return counts


def draw(reports: list[StepReport]) -> Any:
    """The figure (a matplotlib Figure) for a simulation's step reports."""
    Figure = _figure_class()  # noqa: N806 (a class)
    from matplotlib.transforms import blended_transform_factory

    queues = sorted({figures.name for report in reports for figures in report.queues})
    figure = Figure(figsize=(10, 1.0 + 2.4 * max(1, len(queues))), layout="constrained")
    axes = figure.subplots(max(1, len(queues)), 1, sharex=True, squeeze=False)[:, 0]
    steps = list(range(len(reports)))
    for ax, queue in zip(axes, queues):
        ax.set_gid(f"queue:{queue}")
        lines, unmeasured = queue_lines(reports, queue)
        for line in lines:
            (drawn,) = ax.plot(steps, line.percent, marker="o", markersize=3, drawstyle="steps-post",
                              label=line.label)
            drawn.set_gid(f"usage:{queue}:{line.label}")
            if line.borrowing_limit_percent is not None:
                ax.axhline(line.borrowing_limit_percent, color=drawn.get_color(), linestyle=":", linewidth=1,
                           label=f"{line.label} borrowing limit")
        ax.axhline(100, color="black", linestyle="--", linewidth=1, label="nominal quota")
        above = blended_transform_factory(ax.transData, ax.transAxes)
        for row, kind in enumerate((ADMISSION, PREEMPTION)):
            marker, colour, verb = MARK_STYLE[kind]
            for step, count in mark_counts(reports, queue, kind).items():
                y = 1.05 + 0.1 * row
                (drawn,) = ax.plot([step], [y], marker=marker, color=colour, linestyle="none", transform=above,
                                   clip_on=False)
                drawn.set_gid(f"{kind}:{queue}:{step}:{count}")
                ax.text(step + 0.08, y, f"{count} {verb}", transform=above, fontsize=7, va="center", color=colour)
        title = f"ClusterQueue {queue}"
        if unmeasured:
            title += f" (no nominal quota, not drawn: {', '.join(unmeasured)})"
        ax.set_title(title, loc="left", fontsize=9, pad=30)
        ax.set_ylabel("% of nominal")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        ax.grid(True, alpha=0.3)
    if not queues:
        axes[0].text(0.5, 0.5, "the trace has no ClusterQueue", ha="center", transform=axes[0].transAxes)
    labels = [f"step {i}\n{report.time:%H:%M:%S}" if report.time else f"step {i}" for i, report in enumerate(reports)]
    axes[-1].set_xticks(steps, labels, fontsize=7)
    axes[-1].set_xlabel("step (simulated time at its end)")
    figure.suptitle("batchgate simulate: ClusterQueue usage against nominal quota; "
                    "admissions (^) and preemptions (x) per step", fontsize=10)
    return figure


def write(reports: list[StepReport], target: Path) -> None:
    """Draw and save; an unwritable file is a PlotError naming it."""
    figure = draw(reports)
    try:
        figure.savefig(target, format=target.suffix.lower().lstrip("."))
    except OSError as exc:
        raise PlotError(f"--plot: cannot write {target}: {exc.strerror or exc}") from None
