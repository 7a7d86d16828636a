"""Which runs of a log make one job: the restart rule.

Runs append to one log (``log_path=``) in file order. A run continues the
job of the run before it -- a restart of the same job -- only when it says
it resumes:

* its ``start_step`` is > 0 (it resumed from a checkpoint), or
* it carries a job id (``Tracker(job=...)``, ``MFU_TRACKER_JOB``,
  ``TORCHELASTIC_RUN_ID`` or ``SLURM_JOB_ID``) equal to the previous run's.

Two runs whose job ids are both given and differ are two jobs whatever
their ``start_step``. Otherwise -- ``start_step`` 0 and no job id: the same
script simply run again into the same file -- the run starts a new job, and
the ledger says so in a note. A run record without an explicit id holds its
run id as ``job`` (:func:`~._records.job_name`), which is how "no job id" is
told from one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from ._records import Log, Run

__all__ = ["Job", "given_job", "new_job_reason", "jobs"]


@dataclass
class Job:
    """One job of a log: its runs (file order) and why it starts a new job."""

    number: int                 # 1, 2, ... in file order
    runs: List[Run]
    reason: Optional[str]       # why its first run did not continue the job before (None: the first)

    def describe(self) -> str:
        first, last = self.runs[0].number, self.runs[-1].number
        return f"run {first}" if first == last else f"runs {first}-{last}"


def given_job(run: Run) -> Optional[str]:
    """The job id the run was given (None: none; its ``job`` is its run id)."""
    job = run.get("job")
    if not isinstance(job, str) or not job or job == run.get("run_id"):
        return None
    return job


def new_job_reason(prev: Run, run: Run) -> Optional[str]:
    """None when ``run`` continues ``prev``'s job (the module's rule), else why not."""
    job, before = given_job(run), given_job(prev)
    if job is not None and before is not None:
        if job == before:
            return None
        return f"run {run.number}'s job id {job!r} differs from run {prev.number}'s {before!r}"
    start = run.get("start_step") or 0
    if isinstance(start, (int, float)) and start > 0:
        return None
    return (f"run {run.number} has start_step 0 and no job id: it starts a new job "
            f"(a restart resumes: start_step=N, or the same job id)")


def jobs(log: Log) -> List[Job]:
    """The log's jobs, in file order (runs without a run record: one job)."""
    found: List[Job] = []
    for i, run in enumerate(log.runs):
        reason = None if i == 0 else new_job_reason(log.runs[i - 1], run)
        if i == 0 or reason is not None:
            found.append(Job(number=len(found) + 1, runs=[run], reason=reason))
        else:
            found[-1].runs.append(run)
    return found
