"""FINDINGS.md and the README's table of claims: every training notebook's reading (findings.py) together,
each paper claim's verdict before and after Holm's correction over all of them, and what the whole study
costs from scratch, summed from the stored runs.

    python -m adapterlab.report.document --profile default --write   # FINDINGS.md and the README's claims table
    print(document.report("default"))                                 # the same text, printed
"""
import argparse
import math
import re
from collections import Counter
from pathlib import Path

from ..experiments import families, profiles, stats
from . import provenance
from .findings import READERS, budget_control, load
from .lesson import teaching, teaching_table, test_examples

BEGIN, END = "<!-- claims:begin (python -m adapterlab.report.document --write) -->", "<!-- claims:end -->"
FINDINGS_HEADER = """# Findings of the `default` profile

MiniLM-L6 on airline sentiment, on CPU: every reading of notebooks 03-08, each paper claim with its verdict,
the interval that decides it and the paper's own number. Generated from the committed records and tables in
`data/results/default/` by `python -m adapterlab.report.document --write`; a test keeps this file equal to
them. How the runs were made and judged, and every change to those rules, is in docs/protocol.md.

"""


def corrected(rows):
    """[(notebook, claim, verdict, verdict after Holm's correction over all the rows' claims)]."""
    after = stats.holm([v for _, _, v in rows])
    return [(stem, title, v, h) for (stem, title, v), h in zip(rows, after)]


def claims_table(rows):
    """A markdown table of (notebook, claim, verdict): the closing list of every paper claim, each verdict
    before and after Holm's correction (with its adjusted p-value), the interval that decides it and the
    paper's own number."""
    out = ["| notebook | claim | verdict | after Holm | here: estimate [interval] | paper |",
           "|---|---|---|---|---|---|"]
    for stem, title, v, h in corrected(rows):
        adjusted = "" if math.isnan(h.holm_p) else f" (p {h.holm_p:.3f})"
        out.append(f"| {stem} | {title} | {v} | {h}{adjusted} | {v.numbers()} | {v.paper_text()} |")
    return out


def readings(profile="default", root=None):
    """(markdown lines of every training notebook's findings, [(notebook, claim, Verdict)]): from the profile's
    stored runs (03) and committed CSVs (04-08: findings.READERS) under `root` (profiles.project_root)."""
    out, rows = [], []
    taught = provenance.stored_runs(profile, "teaching", root)
    if taught:
        results, majority, metric = teaching_table(taught)
        task = taught[0]["task"]
        lines = teaching(results, majority, metric, test_examples(profile, task))
        seconds, what = provenance.cost(taught)
        out += [f"**Training adapters, {task}** (notebook 03: the lesson's runs, no claim rests on them)", *lines,
                f"  *(from scratch: {len(taught)} run(s), {seconds / 60:.0f} min, {what})*", ""]
    for family in READERS:  # every family with a reading, in the notebooks' order
        df = load(profile, family, root)
        if df is None or df.empty:
            continue
        lines, found = READERS[family](df)
        lines += budget_control(load(profile, f"{family}_budget_control", root))
        seconds, runs, what = provenance.from_scratch(profile, family, root)
        cost = f"{runs} run(s), {seconds / 60:.0f} min, {what}" if runs else "the store lacks the current plan's runs"
        out += lines + [f"  *(from scratch: {cost})*", ""]
        rows += [(families.FAMILY_NOTEBOOK[family][:2], title, v) for title, v in found]
    return out, rows


def tally(rows):
    """'26 claims, after Holm's correction over all of them: 2 reproduced, ...' of [(notebook, claim, Verdict)]:
    the headline counts the corrected verdicts."""
    counts = Counter(h.label for *_, h in corrected(rows))
    return (f"{len(rows)} claims, after Holm's correction over all of them: "
            + ", ".join(f"{counts[k]} {k}" for k in stats.VERDICTS if counts[k]))


def report(profile="default"):
    """FINDINGS.md's body: every reading, closed by the list of every paper claim with its verdict and the
    numbers behind it, and the cost of making it all from scratch."""
    out, rows = readings(profile)
    if rows:
        out += [f"**Every paper claim, its verdict and the numbers behind it** ({tally(rows)}"
                + f"; margin ±{stats.MARGIN * 100:g} points, fixed in advance: adapterlab.experiments.stats):", "",
                *claims_table(rows), ""]
    out.append(total_time(profile))
    return "\n".join(out).strip() + "\n"


def notebook_seconds(profile):
    """{notebook stem: (seconds, device)}: what each training notebook's stored runs took to make
    (0 when none is stored), and where they ran ("gpu" if any ran on CUDA, else "cpu")."""
    out = {}
    for stem, family in families.NOTEBOOK_FAMILY.items():
        records = provenance.stored_runs(profile, family)
        cuda = any(str(r.get("device", "cpu")).startswith("cuda") for r in records)
        out[stem] = (provenance.cost(records)[0], "gpu" if cuda else "cpu")
    return out


def total_time(profile):
    """One line: what `make figures-fresh` costs, summed from the stored runs of every notebook."""
    seconds = notebook_seconds(profile)
    missing = [family for stem, family in families.NOTEBOOK_FAMILY.items()
               if family in families.FAMILIES and not seconds[stem][0]]
    listed = ", ".join(f"{stem[:2]} {s / 60:.0f}" for stem, (s, _) in seconds.items())
    total = sum(s for s, _ in seconds.values())
    where = provenance.machines([r for family in families.NOTEBOOK_FAMILY.values()
                                 for r in provenance.stored_runs(profile, family)])
    return (f"**From scratch in all** (`make figures-fresh`): {total / 3600:.1f} h of stored "
            f"training runs (minutes per notebook: {listed}), as timed on the machines that made them "
            f"({where}; a run trained beside others counts for its share: run_seconds / workers)"
            + (f"; {', '.join(missing)} not stored yet, so more" if missing else "") + ".")


def claims_summary(profile="default"):
    """The README's short table: each paper claim and its verdict, the full numbers being in FINDINGS.md."""
    rows = readings(profile)[1]
    out = [f"{tally(rows)} (margin ±{stats.MARGIN * 100:g} points, fixed in advance).", "",
           "| notebook | claim | verdict | after Holm | paper |", "|---|---|---|---|---|"]
    out += [f"| {stem} | {title} | {v} | {h} | {v.paper_text()} |" for stem, title, v, h in corrected(rows)]
    return "\n".join(out) + "\n"


def findings_document(profile="default"):
    """FINDINGS.md as the records give it."""
    return FINDINGS_HEADER + report(profile)


def write(profile="default", root=None):
    """Write FINDINGS.md and the README's claims table (between BEGIN and END) from the records."""
    from ..methods.atomic import atomic_write
    root = Path(root or profiles.project_root())
    readme = root / "README.md"
    text = readme.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no claims markers; put {BEGIN} and {END} where the table goes")
    atomic_write(root / "FINDINGS.md", findings_document(profile))
    atomic_write(readme, pattern.sub(lambda _: f"{BEGIN}\n{claims_summary(profile)}{END}", text))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m adapterlab.report.document", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--write", action="store_true", help="write FINDINGS.md and the README's claims table")
    args = parser.parse_args()
    if args.write:
        write(args.profile)
    print(report(args.profile))
