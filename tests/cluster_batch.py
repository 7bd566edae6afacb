"""A small batch through a kvserver route, run in a process of its own, for the tests
that read what another process wrote (the Dashboard started after a CLI batch):

    python -m tests.cluster_batch DB N

Starts three ``tests.fake_kvserver`` processes (``p`` prefills; ``d1`` and ``d2``
decode, ``d1`` ranked first by its seeded speed), kills ``d1`` once the client has
probed it up, so that the first request finds it refusing and its KV is pulled by
``d2`` instead (a failover), sends N requests, closes the client (its history and
cluster journal go to DB), stops the servers and prints one JSON line: the servers'
addresses, the requests' ids and failover notes, and when the batch saw ``d1`` go down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from inference import DisaggregatedClient, GenerationRequest
from inference.config import parse_config

ROOT = Path(__file__).resolve().parents[1]


def start(role: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.fake_kvserver", "--role", role,
                             *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    proc.stdout.close()
    found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    if found is None:
        proc.kill()
        raise RuntimeError(f"fake kvserver did not start: {line!r}")
    return proc, found.group(1)


def main() -> None:
    db, n = Path(sys.argv[1]), int(sys.argv[2])
    servers = {"p": start("prefill"), "d1": start("decode", "--decode-tps", "500"),
               "d2": start("decode", "--decode-tps", "5")}
    roles = {"p": "prefill", "d1": "decode", "d2": "decode"}
    config = parse_config({
        "engine": {"threads": 1, "history_db": str(db)},
        "servers": {name: {"url": url, "role": roles[name]}
                    for name, (_, url) in servers.items()},
        "roles": {"code": {"backend": "kvserver", "servers": list(servers),
                           "embedded_fallback": False, "options": {"handoff": "always"}}},
        "health": {"probe_interval": 600, "breaker_failures": 1, "canary_interval": 0},
        "timeouts": {"connect": 1.0, "prefill": 30.0, "kv_pull": 30.0, "first_token": 30.0,
                     "token_gap": 30.0, "probe": 2.0}})
    try:
        with DisaggregatedClient(config) as client:
            monitor = client.backend("code").cluster.monitor  # probed: all three up
            servers["d1"][0].kill()
            servers["d1"][0].wait(10)
            results = [client.generate(GenerationRequest.chat(
                "code", "Answer briefly.", f"What does join number {i} keep?", max_tokens=3,
                temperature=0.0)) for i in range(n)]
            down = [e.at for e in monitor.events() if e.server == "d1" and e.kind == "down"]
    finally:
        for proc, _ in servers.values():
            proc.kill()
            proc.wait(10)
    sys.stdout.write(json.dumps({
        "urls": {name: url for name, (_, url) in servers.items()},
        "requests": [r.metrics.request_id for r in results],
        "failovers": [r.metrics.failover for r in results if r.metrics.failover],
        "d1_down_at": down[0] if down else None}) + "\n")


if __name__ == "__main__":
    main()
