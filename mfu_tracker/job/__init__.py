"""The job: a training job as its runs, restarts and all, seen from its metrics log.

Owns the metrics log's records (:mod:`._records`: the run, metrics, peak-check
and run-end lines, the ledger interval), reading a log back in one pass
(:mod:`._stream`: the scanner and the readers it feeds, every invalid value
named and every unreadable line skipped and counted; the checks compiled per
set of keys, :mod:`._check`; the ledger's intervals booked as they come,
:mod:`._intervals`; a long run's series downsampled, :mod:`._sample`), its
writer (:mod:`._log`: ``log_path=``, rank 0 only, one write per whole line,
never raising into training), which runs make one job (:mod:`._jobs`: a run
continues one only when it resumes), the job ledger's arithmetic
(:mod:`._ledger`: goodput, the badput buckets, lost progress, one job MFU,
the diagnosis line), the Prometheus endpoint (:mod:`._prometheus`: the
latest ``metrics()`` values and every rank's as gauges, served from a cache)
and a tracker's run in the job (:mod:`._run`: its run record, ledger
intervals from the step engine's totals, its run end).

Layer 7 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import: every layer below it.
The Tracker writes the records and serves the endpoint; ``mfu-tracker report``
and ``mfu-tracker goodput`` read them.
"""
from ._jobs import Job, jobs
from ._ledger import BUCKETS, JobLedger, RunLedger, diagnosis, job_ledger
from ._records import Log, LogError, Run, process_start_time
from ._stream import LogReader, Sink, read_log, stream_log

__all__ = ["BUCKETS", "Job", "JobLedger", "RunLedger", "Log", "LogError", "LogReader", "Run",
           "Sink", "diagnosis", "job_ledger", "jobs", "process_start_time", "read_log",
           "stream_log"]
