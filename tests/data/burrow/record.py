"""Record a real Burrow's complete answers to every endpoint the client calls, for the unit tests
to replay through `responses` (tests/unit/test_burrow_contract.py).

Why: the client's contract with Burrow is what Burrow really sends, version by version, not what
a hand-written fake believes it sends. This brings up the dev stack (devstack.RealStack: Kafka
and a Burrow), makes the group shapes the client must read, waits until Burrow has evaluated
them, and writes one file per answer: `{"path", "status", "content_type", "body"}`, the body as
the exact text Burrow sent.

    python tests/data/burrow/record.py                      # Debian's Burrow 1.2.1, Kafka 3.9.1
    FT_BURROW_BIN=/path/to/Burrow python tests/data/burrow/record.py \\
        --kafka-version 4.1.1 --version 1.9.5               # a Burrow the user built

It runs the binaries it is given; it fetches nothing.
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from devstack.stack import RealStack, now_ms

HERE = Path(__file__).parent
TOPIC = "orders"
PARTITIONS = 3
RECORDS = 20  # per partition
#: The groups recorded, by what each shows.
LAGGING = "live-group"  # committed 5 behind the end on every partition, twice
CAUGHT_UP = "caught-up-group"  # committed at the end
PARTIAL = "partial-group"  # committed on partition 0 only: the others have no commit (null)
LOST = "lost-group"  # committed below the log start: its records were deleted (data loss)
MEMBER = "member-group"  # a live member holds the partitions: owner and client_id
VANISHED = "vanished-group"  # never existed: Burrow's 404
GROUPS = (LAGGING, CAUGHT_UP, PARTIAL, LOST, MEMBER)


def get(url: str) -> tuple[int, str, str]:
    """(status, content type, body text) of a GET, 4xx/5xx included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def wait_for(stack: RealStack, group: str, check: Any, timeout_s: float = 90.0) -> None:
    """Until Burrow's `/lag` answer for `group` satisfies `check` (its JSON)."""
    deadline = time.monotonic() + timeout_s
    body: Any = None
    while time.monotonic() < deadline:
        status, _, text = get(f"{stack.burrow_url}/v3/kafka/{stack.cluster}/consumer/{group}/lag")
        if status == 200:
            body = json.loads(text)
            if check(body["status"]):
                return
        time.sleep(0.5)
    raise TimeoutError(f"Burrow never showed {group} as wanted; last answer: {body}")


def make_groups(stack: RealStack) -> Consumer:
    """The groups of GROUPS, committed as each shape needs; returns the live member (close it
    after recording)."""
    stack.create_topic(TOPIC, PARTITIONS)
    base = now_ms() - 600_000
    for p in range(PARTITIONS):
        stack.produce(TOPIC, p, [base + 10_000 * i for i in range(RECORDS)])
    for p in range(PARTITIONS):
        stack.commit(LAGGING, TOPIC, p, RECORDS - 8)
        stack.commit(CAUGHT_UP, TOPIC, p, RECORDS)
        stack.commit(LOST, TOPIC, p, 2)
    stack.commit(PARTIAL, TOPIC, 0, RECORDS - 3)
    time.sleep(1.5)  # Burrow's min-distance: a second commit 1 s later is a second window
    for p in range(PARTITIONS):
        stack.commit(LAGGING, TOPIC, p, RECORDS - 5)
        stack.delete_records(TOPIC, p, 10)
    member = Consumer({"bootstrap.servers": stack.bootstrap_servers, "group.id": MEMBER,
                       "client.id": "recorded-client", "enable.auto.commit": False,
                       "auto.offset.reset": "earliest", **stack.client_config})
    member.subscribe([TOPIC])
    deadline = time.monotonic() + 60
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.5)
    for _ in range(5):
        member.poll(0.2)
    member.commit(asynchronous=False)
    wait_for(stack, LAGGING, lambda s: all(
        (p.get("end") or {}).get("offset") == RECORDS - 5 for p in s["partitions"]))
    wait_for(stack, CAUGHT_UP, lambda s: len(s["partitions"]) == PARTITIONS)
    wait_for(stack, LOST, lambda s: len(s["partitions"]) == PARTITIONS)
    wait_for(stack, PARTIAL, lambda s: bool(s["partitions"]))
    wait_for(stack, MEMBER, lambda s: bool(s["partitions"]))
    return member


def paths(cluster: str) -> dict[str, str]:
    """File name → path, for every endpoint the client calls (and the ones beside them)."""
    consumer = f"/v3/kafka/{cluster}/consumer"
    named = {"admin": "/burrow/admin", "clusters": "/v3/kafka", "cluster": f"/v3/kafka/{cluster}",
             "consumers": consumer, "topics": f"/v3/kafka/{cluster}/topic",
             "topic_orders": f"/v3/kafka/{cluster}/topic/{TOPIC}",
             "unknown_cluster": "/v3/kafka/no-such-cluster"}
    for group in (*GROUPS, VANISHED):
        named[f"{group}_lag"] = f"{consumer}/{group}/lag"
        named[f"{group}_status"] = f"{consumer}/{group}/status"
        named[f"{group}_detail"] = f"{consumer}/{group}"
    return named


def record(stack: RealStack, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, path in paths(stack.cluster).items():
        status, content_type, text = get(stack.burrow_url + path)
        answer = {"path": path, "status": status, "content_type": content_type, "body": text}
        (out / f"{name}.json").write_text(json.dumps(answer, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="1.2.1", help="Burrow's version: the directory")
    parser.add_argument("--kafka-version", default=None, help="default: the dev stack's")
    args = parser.parse_args()
    with RealStack(kafka_version=args.kafka_version) as stack:
        member = make_groups(stack)
        try:
            record(stack, HERE / args.version)
        finally:
            member.close()


if __name__ == "__main__":
    main()
