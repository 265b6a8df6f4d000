"""Entity linking of what an index run commits: beside the pass in a process of its own, or, for
a few episodes, after it in this one (``linker_for``).

`memory-pipeline index` also does the ``entity_mentions`` partitions' work. That work is Python
as large as the pass's own: on a thread it would wait for the interpreter lock, after the pass it
would add its time. So a worker process takes the ids of each committed batch
(``EntityLinker.link``) and commits their names and links a page at a time
(``entities_store.link_episodes``). The worker's failure is raised in the command; the command's
failure stops the worker. No committed work is lost: an episode with chunks but no names is
linked by the next ``index`` or by the ``entity_mentions`` asset.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import traceback
from typing import NoReturn

import psycopg

from memory_pipeline.errors import DatabaseUnavailable, MemoryPipelineError
from memory_pipeline.storage import entities_store
from memory_pipeline.storage.database import Database, database_errors, redact

# Runs planning fewer episodes than this link them in this process after the pass
# (``InlineLinker``): starting a worker interpreter costs more than their linking (an MCP add,
# an HTTP index of a few documents). Both store the same rows (``entities_store.link_episodes``).
LINK_IN_PROCESS_BELOW = 50
# How often a waiting worker checks that the command that started it is still there.
PARENT_CHECK_SECONDS = 1.0
# How long a stopped worker gets to end before it is killed.
STOP_SECONDS = 5.0


class LinkingFailed(MemoryPipelineError):
    """The linking worker ended without a result (killed from outside, or a bug: its traceback)."""


class EntityLinker:
    """The linking worker of one command: ``with EntityLinker(url) as linker: ... linker.link(ids)
    ... linker.finish()``. Leaving the block without ``finish`` (an error, Ctrl-C) stops it."""

    def __init__(self, url: str):
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: the pass has threads
        self._inbox = context.Queue()
        self._results, self._results_end = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_work,
            args=(url, self._inbox, self._results_end, os.getpid()),
            name="memory-pipeline entity linking",
            daemon=True,
        )
        self._failure: BaseException | None = None  # raised once; ``finish`` raises it again

    def __enter__(self) -> EntityLinker:
        # Ctrl-C is the command's to handle (it stops the worker); the worker starts with SIGINT
        # blocked, inherited, so one pressed while it starts up cannot print its own traceback.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self._process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        self._results_end.close()  # the worker's now: its end reads as closed once the worker is gone
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def link(self, episode_ids: list[int]) -> None:
        """Queue committed episodes for linking (never waits); raises the worker's failure, once:
        after it, a failing pass still commits what it holds and calls this again."""
        if self._failure is not None:
            return
        self._check()
        if episode_ids:
            self._inbox.put(list(episode_ids))

    def finish(self) -> entities_store.EntityReport:
        """Wait until everything queued is linked: the worker's report, or its failure raised."""
        if self._failure is not None:
            raise self._failure
        self._inbox.put(None)
        while not self._results.poll(PARENT_CHECK_SECONDS):
            if not self._process.is_alive() and not self._results.poll():
                self._failed(self._ended_without_result())
        report = self._received()
        self._process.join()
        return report

    def stop(self) -> None:
        """End the worker if it still runs (what it did not commit stays unlinked: module docstring)."""
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(STOP_SECONDS)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        self._inbox.cancel_join_thread()  # ids the worker will never read are not waited for
        self._inbox.close()
        self._results.close()

    def _check(self) -> None:
        if self._results.poll():
            self._received()  # only a failure comes before ``finish``
        elif not self._process.is_alive():
            self._failed(self._ended_without_result())

    def _received(self) -> entities_store.EntityReport:
        try:
            kind, value = self._results.recv()
        except EOFError:  # ended without a word
            self._process.join()
            self._failed(self._ended_without_result())
        if kind == "database":
            self._failed(DatabaseUnavailable(value))
        if kind == "bug":
            self._failed(LinkingFailed(f"linking entity mentions failed (a bug):\n{value}"))
        return value

    def _failed(self, failure: BaseException) -> NoReturn:
        self._failure = failure
        raise failure

    def _ended_without_result(self) -> LinkingFailed:
        return LinkingFailed(
            f"the entity-linking worker ended unexpectedly (exit code {self._process.exitcode}); "
            "the episodes it had not linked are linked by the next `memory-pipeline index`"
        )


def _work(url: str, inbox, results, parent: int) -> None:
    """The worker: link what earlier runs left unlinked, then each batch the command sends,
    until it sends None; send ("done", report), or the failure."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        report = entities_store.EntityReport()
        matchers = entities_store.Matchers()
        with database_errors(f"entity linking, {redact(url)}"):
            with psycopg.connect(
                url, autocommit=True, connect_timeout=10, application_name="memory_pipeline linking"
            ) as conn:
                entities_store.link_episodes(
                    conn, entities_store.unlinked_episodes(conn), matchers, report
                )
                while (episode_ids := _next(inbox, parent)) is not None:
                    entities_store.link_episodes(conn, episode_ids, matchers, report)
                entities_store.compact_mention_counts(conn)
        results.send(("done", report))
    except DatabaseUnavailable as exc:
        results.send(("database", exc.detail))
    except _ParentGone:
        pass
    except BaseException:  # noqa: BLE001 - a bug: its traceback goes to the command
        results.send(("bug", traceback.format_exc()))


class _ParentGone(Exception):
    pass


def _next(inbox, parent: int) -> list[int] | None:
    while True:
        try:
            return inbox.get(timeout=PARENT_CHECK_SECONDS)
        except queue.Empty:
            if os.getppid() != parent:  # the command was killed: nobody will read a result
                raise _ParentGone() from None


class InlineLinker:
    """``EntityLinker``'s work in this process: ``link`` only notes the committed episodes;
    ``finish`` links them, and what earlier runs left unlinked, on a pooled connection."""

    def __init__(self, db: Database):
        self.db = db
        self.queued: list[int] = []

    def __enter__(self) -> InlineLinker:
        return self

    def __exit__(self, *exc_info) -> None:
        pass

    def link(self, episode_ids: list[int]) -> None:
        self.queued.extend(episode_ids)

    def finish(self) -> entities_store.EntityReport:
        report = entities_store.EntityReport()
        with self.db.connection() as conn:
            ids = sorted(set(entities_store.unlinked_episodes(conn)) | set(self.queued))
            entities_store.link_episodes(conn, ids, entities_store.Matchers(), report)
            entities_store.compact_mention_counts(conn)
        return report


def linker_for(db: Database, planned: int) -> EntityLinker | InlineLinker:
    """The linker of an index run that set out to index ``planned`` episodes: a worker process
    beside the pass for a large run, this process after it for a small one."""
    return InlineLinker(db) if planned < LINK_IN_PROCESS_BELOW else EntityLinker(db.url)
