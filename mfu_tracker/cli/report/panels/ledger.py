"""The job ledger (:mod:`mfu_tracker.job._ledger`), when every run of the log
has its run record: one bar per run of the job the last drawn run belongs to
and one for the job, goodput then each badput bucket, as fractions of each
bar's wall time."""
from __future__ import annotations

from typing import Any, List, Optional

from ....job._jobs import jobs
from ....job._ledger import BUCKETS, JobLedger, diagnosis, job_ledger
from ....job._records import LogError
from ..._figures import significant
from .._model import Report
from ._base import Panel


class LedgerPanel(Panel):
    name = "ledger"

    def collect(self, report: Report) -> Optional[JobLedger]:
        runs = report.log.runs
        if not runs or any(run.record is None for run in runs):
            return None
        last = report.runs[-1]
        job = next(j.number for j in jobs(report.log) if last in j.runs)
        try:
            return job_ledger(report.log, job)
        except LogError as error:
            report.missing.append(f"the job ledger: {error}")
            return None

    def text(self, report: Report, data: JobLedger) -> List[str]:
        lines = ["job ledger (seconds; one bar per run, then the job; goodput + badput = wall):"]
        for run in data.runs:
            cells = " ".join(f"{k}={v!r}" for k, v in run.seconds.items())
            lines.append(f"  run={run.number} start_step={run.start_step} wall_s={run.wall_s!r} "
                         f"{cells}")
        cells = " ".join(f"{k}={v!r}" for k, v in [("goodput", data.goodput_s),
                                                    *data.badput_s.items()])
        lines.append(f"  job wall_s={data.job_wall_s!r} {cells}")
        name, share = data.largest_loss()
        lines.append(f"  job: {diagnosis({name: share}, 'the job wall time')}")
        return lines

    def summary(self, report: Report, data: JobLedger) -> List[str]:
        job_mfu = "" if data.job_mfu is None else f", job MFU {data.job_mfu:.3g}"
        name, share = data.largest_loss()
        return [f"job: goodput {data.goodput:.3f} of {significant(data.job_wall_s)} s over "
                f"{len(data.runs)} run(s){job_mfu}; "
                f"{diagnosis({name: share}, 'the job wall time')}"]

    def draw(self, ax: Any, report: Report, data: Optional[JobLedger]) -> None:
        assert data is not None
        names = ["goodput", *BUCKETS]
        rows = [(f"run {r.number} ({significant(r.wall_s)} s)", r.seconds, r.wall_s) for r in data.runs]
        rows.append((f"job ({significant(data.job_wall_s)} s)",
                     {"goodput": data.goodput_s, **data.badput_s}, data.job_wall_s))
        positions = list(range(len(rows)))[::-1]
        lefts = [0.0] * len(rows)
        for name in names:
            widths = [seconds[name] / wall if wall > 0 else 0.0 for _, seconds, wall in rows]
            ax.barh(positions, widths, left=lefts, label=name)
            lefts = [a + b for a, b in zip(lefts, widths)]
        ax.set_yticks(positions, [label for label, _, _ in rows])
        ax.set_xlim(0, max(1.0, max(lefts)))
        ax.set_xlabel("fraction of the bar's wall time")
        ax.set_title(f"the job ledger: goodput {data.goodput:.3f} of {significant(data.job_wall_s)} s"
                     + ("" if data.job_mfu is None else f", job MFU {data.job_mfu:.3g}"))
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")


PANEL = LedgerPanel()
