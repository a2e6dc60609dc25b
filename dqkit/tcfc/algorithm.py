"""Algorithm 1 (Time-Constrained Fragment and Compare), as the spec's §2.13 reads it.

* Roots first (T1): one job per pair at level 1 with the empty filter; all roots run before any deeper job.
* Job order (T2): roots, then result-reuse checks, then error pursuit, then healthy continuations; within a
  group by level (breadth-first), then user priority (higher first), then insertion order. ``order`` is
  pluggable (``breadth_first`` is the other built-in).
* Each job runs Algorithm 2 on both sides *in parallel, each in its own engine* (P2), and compares the
  aggregated rows: MISSING (source only), EXCESS (target only), DIFF (same fragment, an aggregate differs;
  floats within a tolerance, C4). Matching is null-safe (C3): NULL is a fragment value like any other.
* Descent (C6, C7; the errata of Algorithm 1 lines 26-27): every differing fragment of every kind is
  pursued; all differing fragments of one pair and level become ONE batched child job (P1; split only
  above ``max_batch`` parents, by default per engine: ``engines.max_batch``), filtered null-safely on
  the parent X values. A job without differences
  continues (same filter, next level) only while level < healthy_depth; healthy siblings of a differing
  fragment are never descended.
* Budget (T3-T5): the clock starts when the call starts (or at ``started``: the CLI passes the command's
  start). Binding (connections, metadata, starting Spark) runs in a worker thread inside the budget; a
  job whose both sides did not finish before the deadline is cancelled (Spark job tag, PostgreSQL
  cancel + statement_timeout, SQLite/DuckDB interrupt) and left out of the report; the run returns
  UNCOMPLETED within the budget plus ``GRACE_S`` with what was proven and the pending jobs listed.
* Result reuse (U1-U4): see ``dqkit.tcfc.state``.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dqkit.errors import CancelledError, DqkitError
from dqkit.tcfc.engines import BoundPair, EnginePool, SparkEngine, Unrepresentable, bind_pair
from dqkit.tcfc.engines import max_batch as engine_max_batch
from dqkit.tcfc.model import (  # noqa: F401 - the job model, re-exported where it was first defined
    COMPLETED, DIFF, ERROR, EXCESS, GRACE_S, HEALTHY, MISSING, REUSE, ROOT, UNCOMPLETED, _GROUP, Difference, Job,
    ORDERS, JobRecord, RunState, project,
)
from dqkit.tcfc.spec import CompareSpec, TcfcSpec, check_budget, check_run_options, load_spec

from dqkit.tcfc.compare import (  # noqa: F401 - the orders, re-exported where they were first defined
    EQUAL_SAMPLE, ORDER_FUNCTIONS, breadth_first, classify, default_order, sorted_values,
)


# ------------------------------------------------------------------------------------------ running
class _SideCall(threading.Thread):
    """One side's aggregate query in its own (daemon) thread, so the deadline can interrupt it."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__(daemon=True, name="dqkit-tcfc-side")
        self.fn = fn
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the scheduler
            self.error = exc


def _bounded(fn: Callable[[], Any], seconds: float) -> None:
    """Call ``fn`` in a daemon thread and wait at most ``seconds`` for it (a cancel must not hang a run)."""
    t = _SideCall(fn)
    t.start()
    t.join(seconds)


class Scheduler:
    """The priority queue of Algorithm 1 and its loop, with the deadline and result reuse."""

    def __init__(self, spec: TcfcSpec, pool: EnginePool, budget: float | None,
                 order: Callable[[Job], tuple] = default_order, max_batch: int | None = None,
                 progress: Callable[[str, str, int, int], None] | None = None,
                 on_job: Callable[[JobRecord, list[Difference]], None] | None = None,
                 cancel: threading.Event | None = None, started: float | None = None,
                 compare_in_spark: bool = True, statistics: bool = False) -> None:
        self.spec = spec
        self.statistics = statistics
        self.compare_in_spark = compare_in_spark
        self.pool = pool
        self.budget = budget
        self.order = order
        self.max_batch = max_batch or spec.max_batch  # None: per pair, from its engines (MAX_BATCH)
        self.progress = progress
        self.on_job = on_job
        self.cancel_event = cancel or threading.Event()
        self.t0 = started if started is not None else time.monotonic()
        self.deadline = None if budget is None else self.t0 + budget
        self.queue: list[tuple[tuple, int, Job]] = []
        self.ids = itertools.count(1)
        self.seq = itertools.count()
        self.bound: dict[str, BoundPair] = {}
        self.state = RunState(budget=budget)
        self.held: dict[str, dict[tuple, Difference]] = {}       # pair -> root fragments awaiting reuse checks
        self.reuse_open: dict[str, int] = {}                     # pair -> reuse jobs not yet done
        self.reuse_found: dict[str, list[Difference]] = {}
        self.stored_leaves: dict[str, list[dict[str, Any]]] = {}

    # ----- queue
    def push(self, pair: CompareSpec, level: int, kind: str, filter_cols: Sequence[str] = (),
             filter_values: Sequence[tuple] = (), parent: int | None = None, job_id: int | None = None) -> None:
        values = sorted_values({tuple(v) for v in filter_values})
        cap = self.max_batch or min(engine_max_batch(pair.source.engine_kind, filter_cols),
                                    engine_max_batch(pair.target.engine_kind, filter_cols))
        chunks = [values[i:i + cap] for i in range(0, len(values), cap)] if filter_cols else [[]]
        for chunk in chunks:
            job = Job(job_id or next(self.ids), pair.name, level, kind, tuple(filter_cols), tuple(chunk), parent,
                      pair.priority, next(self.seq))
            job_id = None
            heapq.heappush(self.queue, (self.order(job), job.seq, job))

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        r = self.remaining()
        return self.cancel_event.is_set() or (r is not None and r <= 0)

    # ----- the loop
    def run(self, resume: Mapping[str, Any] | None = None) -> RunState:
        st = self.state
        self._bind_all()
        resumed = set(resume or {})
        for pair in self.spec.pairs:
            if pair.name in resumed:
                saved = resume[pair.name]
                st.report += saved["report"]
                if saved.get("examined"):
                    st.examined[pair.name] = saved["examined"]
                for job in saved["pending"]:
                    self.push(pair, job.level, job.kind, job.filter_cols, job.filter_values, job.parent_job)
                st.notes.append(f"{pair.name}: resumed from the stored run ({len(saved['pending'])} pending job(s))")
            else:
                self.push(pair, 1, ROOT)
        done = 0
        while self.queue:
            if self.expired() or any(p.name not in self.bound for p in self.spec.pairs):
                break
            _, _, job = heapq.heappop(self.queue)
            try:
                outcome = self._run_job(job)
            except BaseException:  # an engine failed (a server lost mid-run): the job stays to do
                st.pending.append(job)
                raise
            if outcome is None:  # interrupted by the deadline or a cancel
                st.pending.append(job)
                break
            done += 1
            if self.progress is not None:
                self.progress("job", job.describe(), done, done + len(self.queue))
        st.pending += [j for _, _, j in sorted(self.queue)]
        if st.pending or self.expired() and self.queue:
            st.status = UNCOMPLETED
        if any(p.name not in self.bound for p in self.spec.pairs):
            st.status = UNCOMPLETED
        st.cancelled_by_user = self.cancel_event.is_set() and st.status == UNCOMPLETED
        st.seconds = time.monotonic() - self.t0
        return st

    def _bind_all(self) -> None:
        """Bind every pair (open connections, read metadata, start Spark) inside the budget (T3).

        Binding runs in a daemon worker thread; the scheduler waits for it only until the deadline or a
        cancel. Then it stops waiting: the pairs bound so far are kept, the others stay unbound (their
        roots are reported pending), the engines are asked to cancel what they run, and the worker is
        told to bind no further pair. A bind error raised in time is raised here as before."""
        done: dict[str, BoundPair] = {}
        stop = threading.Event()

        def work() -> None:
            for pair in self.spec.pairs:
                if stop.is_set():
                    return
                done[pair.name] = bind_pair(pair, self.pool)

        call = _SideCall(work)
        call.name = "dqkit-tcfc-bind"
        call.start()
        while call.is_alive() and not self.expired():
            r = self.remaining()
            call.join(0.05 if r is None else max(0.0, min(0.05, r)))
        if call.is_alive():
            stop.set()
            _bounded(self.pool.cancel_all, GRACE_S * 0.4)
            self.bound.update({name: bp for name, bp in list(done.items())})
            waiting = [p.name for p in self.spec.pairs if p.name not in self.bound]
            why = "it was cancelled" if self.cancel_event.is_set() else "the budget expired"
            self.state.notes.append(
                f"{why} while binding the engines (opening connections, reading metadata, starting Spark); "
                f"not bound, so not compared: {', '.join(waiting)}")
            return
        if call.error is not None:
            raise call.error
        self.bound.update(done)

    def _run_job(self, job: Job) -> list[Difference] | None:
        bp = self.bound[job.pair]
        pair = bp.spec
        lv = pair.levels[job.level - 1]
        src_engine, tgt_engine = bp.source.engine, bp.target.engine
        deadline = self.deadline
        # the last level of a multi-level pair is a key in the paper's strategies (Table 1): one row a group
        near = job.level == pair.full_depth and pair.full_depth > 1
        stats_used: dict[str, str] = {}
        if self._statistics_apply(job, lv):
            # P4: an X = ∅ COUNT root answered from a side's exact statistics; the other side (or a side
            # without them) runs its query. Each side in its own thread, so the deadline still applies.
            def side_call(b: Any, role: str) -> Any:
                row, origin = b.engine.exact_statistics(b, lv.A)
                if row is not None:
                    stats_used[role] = origin
                    return [row], 0
                return b.engine.aggregate(b, lv.X, lv.A, job.filter_cols, job.filter_values, deadline, near)

            calls = [_SideCall(lambda b=b, r=r: side_call(b, r)) for b, r in ((bp.source, "source"),
                                                                              (bp.target, "target"))]
        elif self.compare_in_spark and isinstance(src_engine, SparkEngine) and isinstance(tgt_engine, SparkEngine) \
                and src_engine.spark is tgt_engine.spark:
            # one engine holds both sides: compare there, fetch only differing fragments (P2 at its cheapest)
            def both() -> Any:
                s_rows, t_rows, nbytes = src_engine.compare_in_spark(
                    bp.source, bp.target, lv.X, lv.A, job.filter_cols, job.filter_values, pair.abs_tol, pair.rel_tol,
                    near)
                return (s_rows, nbytes), (t_rows, 0)

            calls = [_SideCall(both)]
        else:
            calls = [_SideCall(lambda b=b: b.engine.aggregate(b, lv.X, lv.A, job.filter_cols, job.filter_values,
                                                              deadline, near)) for b in (bp.source, bp.target)]
        t = time.monotonic()
        for c in calls:
            c.start()
        while any(c.is_alive() for c in calls):
            r = self.remaining()
            wait = 0.05 if r is None else max(0.0, min(0.05, r))
            for c in calls:
                c.join(wait)
            if self.expired():
                break
        if any(c.is_alive() for c in calls) or self.expired() and any(
                isinstance(c.error, CancelledError) for c in calls):
            end = time.monotonic() + GRACE_S * 0.8
            while any(c.is_alive() for c in calls) and time.monotonic() < end:
                src_engine.cancel()  # repeated: a query that started after the first cancel is stopped too
                tgt_engine.cancel()
                for c in calls:
                    c.join(min(0.1, max(0.0, end - time.monotonic())))
            self._record(job, "interrupted", time.monotonic() - t, calls, bp, [])
            return None
        for c in calls:
            if c.error is not None:
                if isinstance(c.error, CancelledError) and self.expired():
                    self._record(job, "interrupted", time.monotonic() - t, calls, bp, [])
                    return None
                raise c.error if isinstance(c.error, DqkitError) else DqkitError(
                    f"pair {pair.name!r}, level {job.level}: {type(c.error).__name__}: {c.error}") from c.error
        if len(calls) == 1:
            (src_rows, src_bytes), (tgt_rows, tgt_bytes) = calls[0].value
        else:
            (src_rows, src_bytes), (tgt_rows, tgt_bytes) = calls[0].value, calls[1].value
        equal: list = []
        diffs = classify(bp, job.level, src_rows, tgt_rows, job, equal)
        for d in diffs:
            for v in d.values:
                if isinstance(v, Unrepresentable):
                    self.state.unrepresentable.append(f"{pair.name} level {job.level} {d.kind}: {v}")
        if job.kind == REUSE:
            diffs = [Difference(**{**d.__dict__, "reused": True}) for d in diffs]
        rec = self._record(job, "done", time.monotonic() - t, calls, bp, diffs,
                           (len(src_rows), len(tgt_rows), src_bytes, tgt_bytes))
        rec.equal_sample, rec.equal_more = equal[:EQUAL_SAMPLE], max(0, len(equal) - EQUAL_SAMPLE)
        rec.queries = len(calls) - len(stats_used)
        if stats_used:
            rec.statistics = "; ".join(f"{role}: {origin}" for role, origin in sorted(stats_used.items()))
            if len(stats_used) == 2:
                rec.source_sql = rec.target_sql = "(statistics)"
            else:
                setattr(rec, f"{next(iter(stats_used))}_sql", "(statistics)")
        self.state.report += diffs
        self.state.examined[pair.name] = max(self.state.examined.get(pair.name, 0), job.level)
        self._children(bp, job, diffs)
        if self.on_job is not None:
            self.on_job(rec, diffs)
        return diffs

    def _statistics_apply(self, job: Job, lv: Any) -> bool:
        """P4 applies to a root job at level 1 with X = ∅ whose aggregates are all counts, when asked for."""
        return (self.statistics and job.kind == ROOT and job.level == 1 and not lv.X and not job.filter_cols
                and bool(lv.A) and all(a.function == "count" for a in lv.A))

    def _record(self, job: Job, status: str, seconds: float, calls: Sequence[_SideCall], bp: BoundPair,
                diffs: Sequence[Difference], sizes: tuple[int, int, int, int] = (0, 0, 0, 0)) -> JobRecord:
        rec = JobRecord(job.job_id, job.pair, job.level, job.kind, len(job.filter_values), status, seconds,
                        *sizes, differences=len(diffs), parent_job=job.parent_job, filter_cols=job.filter_cols,
                        filter_values=job.filter_values, source_sql=bp.source.engine.last_sql,
                        target_sql=bp.target.engine.last_sql)
        self.state.records.append(rec)
        return rec

    # ----- descent (C6, C7) and reuse pruning (U2)
    def _children(self, bp: BoundPair, job: Job, diffs: list[Difference]) -> None:
        pair = bp.spec
        lv = pair.levels[job.level - 1]
        deeper = job.level < pair.full_depth
        if job.kind == ROOT and diffs and self.stored_leaves.get(pair.name):
            if self._start_reuse(bp, job, diffs):
                return
        if job.kind == REUSE:
            self._finish_reuse(bp, job, diffs)
            return
        if diffs and deeper:
            self.push(pair, job.level + 1, ERROR, lv.X, [d.values for d in diffs], job.job_id)
        elif not diffs and deeper and job.level < pair.healthy_depth:
            self.push(pair, job.level + 1, HEALTHY, job.filter_cols, job.filter_values, job.job_id)

    def _start_reuse(self, bp: BoundPair, job: Job, diffs: list[Difference]) -> bool:
        """Queue one narrow check per stored leaf level for the leaves under this root's differing fragments."""
        pair = bp.spec
        x1 = pair.levels[0].X
        roots = {d.values: d for d in diffs}
        by_level: dict[int, list[tuple]] = {}
        for leaf in self.stored_leaves[pair.name]:
            lx = pair.levels[leaf["level"] - 1].X
            if project(leaf["values"], lx, x1) in roots:
                by_level.setdefault(leaf["level"], []).append(leaf["values"])
        if not by_level:
            return False
        self.held[pair.name] = roots
        self.reuse_found[pair.name] = []
        self.reuse_open[pair.name] = 0
        for level, values in sorted(by_level.items()):
            before = len(self.queue)
            self.push(pair, level, REUSE, pair.levels[level - 1].X, values, job.job_id)
            self.reuse_open[pair.name] += len(self.queue) - before
        return True

    def _finish_reuse(self, bp: BoundPair, job: Job, diffs: list[Difference]) -> None:
        pair = bp.spec
        self.reuse_found[pair.name] += diffs
        for d in diffs:  # a stored leaf that still differs and is not at full depth is drilled further
            if d.level < pair.full_depth:
                self.push(pair, d.level + 1, ERROR, d.X, [d.values], job.job_id)
        self.reuse_open[pair.name] -= 1
        if self.reuse_open[pair.name] > 0:
            return
        x1 = pair.levels[0].X
        accounted: dict[tuple, int] = {}
        for d in self.reuse_found[pair.name]:
            key = project(d.values, d.X, x1)
            accounted[key] = accounted.get(key, 0) + (d.error_count or 0)
        drill = []
        for values, root in self.held.pop(pair.name).items():
            if root.error_count is not None and root.error_count > 0 and accounted.get(values) == root.error_count:
                self.state.notes.append(f"{pair.name}: fragment {dict(zip(x1, values))} is accounted for by "
                                        "stored leaves (pruned, U2)")
            else:
                drill.append(values)
        if drill and pair.full_depth > 1:
            self.push(pair, 2, ERROR, x1, drill, job.parent_job)


def run_tcfc(spec: TcfcSpec | Mapping[str, Any] | str, budget: float | None = None, *, spark: Any = None,
             order: str | Callable[[Job], tuple] = "default", max_batch: int | None = None,
             reuse: str | None = None, reuse_mode: str = "prune", connect_timeout: float = 10.0,
             progress: Callable[[str, str, int, int], None] | None = None,
             on_job: Callable[[JobRecord, list[Difference]], None] | None = None,
             cancel: threading.Event | None = None, compare_in_spark: bool = True,
             statistics: bool | None = None, started: float | None = None) -> Any:
    """Run TCFC over every pair of ``spec`` within ``budget`` seconds; returns a ``TcfcResult``.

    ``budget`` (seconds, > 0; default: the spec's, else none: run to completion) bounds the whole call,
    binding included; the call returns within ``budget + GRACE_S``. ``reuse`` names a folder where the
    completed leaves and the pending queue are persisted (U1) and read back: ``reuse_mode='prune'``
    re-checks stored leaves first and prunes root fragments they account for (U2); ``'resume'`` continues
    an interrupted run from its stored queue and report (U3). ``cancel`` (an Event) stops the run like an
    expired budget. ``on_job(record, differences)`` is called after every completed job.
    ``statistics`` (default: the spec's ``statistics``, off) lets an X = ∅ root whose aggregates are all
    counts take a side's counts from exact table statistics instead of a query (P4; see
    ``Engine.exact_statistics``: Parquet footers only); such a job is marked in ``jobs()``.
    ``started`` (a ``time.monotonic()`` value, default: now) is when the budget's clock started; the CLI
    passes the moment the command started, so imports and spec loading count against the budget too.
    """
    from dqkit.tcfc import state as st_mod
    from dqkit.tcfc.result import TcfcResult

    started = time.monotonic() if started is None else started
    tspec = load_spec(spec)
    budget = check_budget(budget if budget is not None else tspec.budget)
    check_run_options(connect_timeout=connect_timeout, max_batch=max_batch)
    if isinstance(order, str):
        if order not in ORDERS:
            from dqkit.errors import ParameterError

            raise ParameterError(f"unknown job order {order!r}", hint=f"use one of {', '.join(ORDERS)}")
        order_fn = ORDER_FUNCTIONS[order]
    else:
        order_fn = order
    if reuse_mode not in ("prune", "resume"):
        from dqkit.errors import ParameterError

        raise ParameterError(f"unknown reuse mode {reuse_mode!r}", hint="use prune or resume")
    pool = EnginePool(spark, connect_timeout)
    sched = Scheduler(tspec, pool, budget, order_fn, max_batch, progress, on_job, cancel, started, compare_in_spark,
                      tspec.statistics if statistics is None else bool(statistics))
    resume = None
    if reuse is not None:
        stored = st_mod.load_state(reuse, tspec)
        sched.state.notes += stored.notes
        if reuse_mode == "resume":
            resume = stored.resumable
        else:
            sched.stored_leaves = stored.leaves
    try:
        state = sched.run(resume)
    except Exception:
        if reuse is not None:  # a server lost mid-run: what was proven is kept for the next --reuse run
            _keep_proven(reuse, tspec, sched)
        raise
    finally:
        pool_for_result = pool
    if reuse is not None:
        st_mod.save_state(reuse, tspec, state)
    result = TcfcResult(tspec, state, sched.bound, pool_for_result, reuse=reuse)
    return result


def _keep_proven(reuse: Any, tspec: Any, sched: Scheduler) -> None:
    """Save the state of a run an engine failure ended: the leaves proven so far, the rest pending
    (UNCOMPLETED), so ``--reuse`` skips what is proven once the server is back. Best effort: the
    failure itself is what the caller reports."""
    from dqkit.tcfc import state as st_mod

    st = sched.state
    st.pending += [j for _, _, j in sorted(sched.queue)]
    st.status = UNCOMPLETED
    st.notes.append("stopped by an engine failure; the proven leaves are kept for the next --reuse run")
    try:
        st_mod.save_state(reuse, tspec, st)
    except Exception:  # noqa: BLE001 - keep the engine's error, not this one
        pass

