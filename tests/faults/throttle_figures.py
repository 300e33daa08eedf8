"""The figures of a throttled run, computed and printed the same way by every
throttling test (tests/cli/throttling_test.py, python/tests/test_throttling.py)
and read back by bench/throttling.sh.

Inputs: the fault proxy's log (entries with "method", "fault", "status" and
"time", a time.monotonic() of the proxy's process, which on one machine is
the clients' clock too), its throttle rule's counters, and the clients'
completion times. Only the standard library.
"""
from __future__ import annotations

import json
import sys
from typing import Callable, Optional, Sequence


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one takes everything."""
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values)) if values else 1.0


def per_second(times: Sequence[float], origin: Optional[float] = None) -> list[int]:
    """How many of `times` fall in each second from `origin` (default: the
    first of them) to the last."""
    if not times:
        return []
    first = min(times) if origin is None else origin
    counts = [0] * (int(max(times) - first) + 1)
    for t in times:
        counts[int(t - first)] += 1
    return counts


def figures(*, label: str, clients: int, rate: float, rule: dict, log: list[dict], start: float,
            finished: Sequence[float], failed: int, needed: int, counted: Callable[[dict], bool],
            method: str = "GET") -> dict:
    """The run's figures. `start`: time.monotonic() when the clients started;
    `finished`: each client's completion time since `start`; `counted`: which
    log entries are the requests the job needs (`needed` of them unthrottled)."""
    elapsed = max(finished) if finished else 0.0
    sent = sum(counted(e) for e in log)
    # Steady state: while every client still runs (until the first one ends),
    # from the first admitted request on: clients that start slowly (Python
    # processes importing torch) send nothing for their first seconds.
    first_done = min(finished) if finished else 0.0
    admitted = [e["time"] for e in log if e["method"] == method and e["fault"] != "throttle"]
    first_admitted = min(admitted) if admitted else start
    steady = sum(t <= start + first_done for t in admitted)
    steady_seconds = start + first_done - first_admitted
    steady_rate = steady / steady_seconds if steady_seconds > 0 else 0.0
    admitted_rate = rule["admitted"] / rule["admitted_seconds"] if rule["admitted_seconds"] else 0.0
    answered = [e["time"] for e in log if counted(e) and e.get("status") in (200, 206) and "time" in e]
    throttled = [e["time"] for e in log if counted(e) and e["fault"] == "throttle" and "time" in e]
    first_answered = min(answered) if answered else 0.0
    # Fairness from the first admitted request on: counted from the clients'
    # launch, the seconds of start-up every client shares would hide how
    # unequal their shares of R were.
    sending = [f - (first_admitted - start) for f in finished]
    return {
        "label": label, "clients": clients, "rate": rate, "seconds": elapsed, "admitted": rule["admitted"],
        "admitted_seconds": rule["admitted_seconds"], "goodput": admitted_rate / rate,
        "steady_goodput": steady_rate / rate, "steady_seconds": steady_seconds, "sent": sent, "needed": needed,
        "throttled": rule["throttled"], "jain": jain(finished), "jain_sending": jain(sending), "failed": failed,
        "per_second": per_second(answered), "method": method,
        # Throttled answers per second over the same seconds as per_second
        # (those before the first admitted answer count in its second): where
        # the requests beyond those needed went, start-up or later.
        "throttled_per_second": per_second([max(t, first_answered) for t in throttled], first_answered)
        if answered else [],
    }


def print_figures(f: dict, flavor: str = "503 SlowDown") -> None:
    """Prints the figures in the format every throttling test shares."""
    admitted_rate = f["goodput"] * f["rate"]
    print(f"  clients failed: {f['failed']} of {f['clients']}")
    print(f"  time: {f['seconds']:.1f} s")
    print(f"  goodput: admitted {f['admitted']} {f['method']}s in {f['admitted_seconds']:.1f} s = "
          f"{admitted_rate:.1f}/s = {f['goodput']:.2f} x R; steady state (first admitted request to the first client's end, "
          f"{f['steady_seconds']:.1f} s): {f['steady_goodput']:.2f} x R")
    ratio = f["sent"] / f["needed"] if f["needed"] else 0.0
    print(f"  requests: {f['sent']} {f['method']}s sent for {f['needed']} needed = {ratio:.2f} x; "
          f"{f['throttled']} throttled ({flavor})")
    print(f"  fairness: Jain's index over completion times = {f['jain']:.3f}; "
          f"over the times from the first admitted request = {f['jain_sending']:.3f}")
    print(f"  admitted {f['method']}s per second: " + " ".join(str(n) for n in f["per_second"]))
    print("  throttled per second: " + " ".join(str(n) for n in f.get("throttled_per_second", [])))
    sys.stdout.flush()


def append_report(path: str, f: dict) -> None:
    """Appends the figures as one JSON line (bench/throttling.sh's tables)."""
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(f) + "\n")
