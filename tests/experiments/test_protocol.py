"""docs/protocol.md's history against the records: every change it lists as made "after data" had records
of the runs it judges stored before it, and every "before data" had none. A sentence such as "written before
any run" is then a computed fact, not a memory."""
import datetime
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "docs" / "protocol.md"
STORE = ROOT / "data" / "results" / "default"


def changes():
    """The rows of the table of changes: (change, family, selector, changed, order)."""
    text = PROTOCOL.read_text(encoding="utf-8")
    section = text.split("## Changes made after data they judge existed", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|") and not set(line) <= set("|- ")]
    header, *body = rows
    assert header[:5] == ["change", "family", "selector", "changed", "order"], header
    return [tuple(row[:5]) for row in body]


def matches(record, selector):
    """A selector is key=value[,key=value...]: steps, lr, seed (of the run), std and bottleneck (the method's
    init std and adapter size), method, step (notebook 08's kind), split (the split layer removal's spans
    are scored on)."""
    config = record["record"].get("config", {})
    train = config.get("train", {})
    found = {"steps": train.get("max_steps"), "lr": train.get("lr", config.get("lr")), "seed": train.get("seed"),
             "std": config.get("method_args", {}).get("init_std"),
             "bottleneck": config.get("method_args", {}).get("bottleneck"), "method": config.get("method"),
             "step": record.get("config", {}).get("step"),  # the unit's kind: 08's sequential steps store no config
             "split": record.get("config", {}).get("split")}
    for part in selector.split(","):
        key, value = part.split("=", 1)
        if key not in found:
            raise ValueError(f"docs/protocol.md: unknown selector {part!r}; use steps=N, lr=X, seed=N, std=X, "
                             "bottleneck=M, method=NAME, step=KIND or split=NAME")
        have = found[key]
        if have is None or (float(have) != float(value) if key in ("steps", "lr", "seed", "std", "bottleneck") else have != value):
            return False
    return True


def first_record(family, selector):
    path = STORE / f"{family}.jsonl"
    if not path.is_file():  # a store file no unit has written yet: no record of it exists
        return None
    times = [datetime.datetime.fromisoformat(r["created"]) for r in map(json.loads, path.read_text().splitlines())
             if matches(r, selector)]
    return min(times) if times else None


def test_the_protocol_lists_changes():
    assert len(changes()) >= 4  # 04's and 05's budgets, 06's budget, the Intrinsic-SAID grid


@pytest.mark.parametrize("change, family, selector, changed, order", changes(), ids=[c[0] for c in changes()])
def test_each_change_is_where_the_records_say_it_is(change, family, selector, changed, order):
    assert order in ("after data", "before data"), f"{change}: order must be 'after data' or 'before data'"
    first = first_record(family, selector)
    when = datetime.datetime.fromisoformat(changed)
    if order == "after data":
        assert first is not None and first < when, (
            f"{change}: docs/protocol.md says records it judges existed before {changed}, but the first "
            f"{family} record with {selector} is {first}")
    else:
        assert first is None or first >= when, (
            f"{change}: docs/protocol.md says no record it judges existed before {changed}, but one was stored "
            f"at {first}: write 'after data' and say what it means for the verdicts")
