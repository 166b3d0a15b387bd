"""Many threads appending to and snapshotting one store: nothing lost, order kept, no
"Already borrowed", every snapshot a prefix of the final history."""

from __future__ import annotations

import threading

from ctxtrim import MemoryContextStore, Message, MessageLog

THREADS = 8
PER_THREAD = 1500
#: The most the racing appender appends (it races the compactions well before that).
APPENDS_MAX = 50_000


def test_eight_threads_append_and_snapshot() -> None:
    store = MemoryContextStore()
    log = store.log
    errors: list[BaseException] = []
    snapshots = []
    start = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        try:
            start.wait()
            for i in range(PER_THREAD):
                log.append(Message.user(f"{t}:{i}"))
                if i % 100 == 0:
                    snap = log.snapshot()
                    snapshots.append((len(snap), snap))
                    fork = log.fork()
                    fork.append(Message.user("fork only"))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    final = log.to_list()
    assert len(final) == THREADS * PER_THREAD
    seen: dict[int, list[int]] = {t: [] for t in range(THREADS)}
    for m in final:
        t, i = map(int, m.text.split(":"))
        seen[t].append(i)
    assert all(seen[t] == list(range(PER_THREAD)) for t in range(THREADS))
    for n, snap in snapshots:
        assert len(snap) == n and snap.to_list() == final[:n]
    assert log.total_tokens == sum(log.token_counts())


def test_compaction_racing_appenders_loses_no_append() -> None:
    """replace_prefix runs its O(n) rebuild without the lock; appends made meanwhile are
    replayed onto the result, never lost."""
    log = MessageLog([Message.user(f"old {i}") for i in range(5000)])
    stop = threading.Event()
    appended: list[str] = []

    def appender() -> None:
        # Bounded: on a slow machine an unbounded appender grew the log by millions of
        # messages while the compactions ran (each one O(n), so slower the longer it grew),
        # up to an out-of-memory kill.
        i = 0
        while (not stop.is_set() or i < 200) and i < APPENDS_MAX:
            text = f"new {i}"
            log.append(Message.user(text))
            appended.append(text)
            i += 1

    th = threading.Thread(target=appender)
    th.start()
    dropped: set[str] = set()
    for _ in range(20):
        snap = log.snapshot()
        upto = len(snap) // 2
        dropped.update(m.text for m in snap.to_list(0, upto))
        log.replace_prefix(upto, [Message.user("summary")], snap.generation)
    stop.set()
    th.join()
    kept = [m.text for m in log.to_list() if m.text.startswith("new ")]
    # Exactly the appends no compaction folded away survive, in append order.
    assert kept == [t for t in appended if t not in dropped]
    assert len(kept) > 0 and log.generation == 20
