"""A profile's findings page: every training notebook's reading (findings.py) together, each declared paper
claim (claims.py) with its verdict before and after Holm's correction over all the tested claims, the exact
checks apart, and what the whole study costs from scratch, summed from the stored runs.

    python -m adapterlab.report.document --profile default --write        # FINDINGS.md and the README's claims
    python -m adapterlab.report.document --profile reviews.toml --write   # findings/reviews.md
    print(document.report("default"))                                      # the page's body, printed

The default profile's page is FINDINGS.md, its claims also a table in the README (both committed). Any other
profile's, a study's above all, is <root>/findings/<name>.md (page_path), beside its data/results/<name>/ and
figures/<name>/: the same readings from its own tables, the claims naming its task with the papers' numbers
beside them, under a header that says what it studies (header).
"""
import argparse
import math
import re
from collections import Counter
from pathlib import Path

from ..experiments import estimate, families, judge, planning, profiles, stats
from ..methods.config import method
from . import claims
from .labels import method_label
from ..training import files
from . import power, provenance
from .findings import budget_control, judged, load, p_text
from .what_to_use import section as what_to_use

BEGIN, END = "<!-- claims:begin (python -m adapterlab.report.document --write) -->", "<!-- claims:end -->"
COMMITTED = "default"  # the profile whose page is FINDINGS.md, with its claims in the README
PAGES = "findings"  # <root>/findings/<name>.md: the page of every other profile
FINDINGS_HEADER = """# Findings of the `default` profile

MiniLM-L6 on airline sentiment, on CPU: every reading of notebooks 03-08, each paper claim with its verdict,
the interval that decides it and the paper's own number. Generated from the committed records and tables in
`data/results/default/` by `python -m adapterlab.report.document --write`; a test keeps this file equal to
them. How the runs were made and judged, and every change to those rules, is in docs/protocol.md.

"""
PAGE_HEADER = """# Findings of {title}

{description}. {tasks}, backbone `{backbone}`: every reading of the notebooks whose tables are stored, each
paper claim judged on its task with its verdict, the interval that decides it and the paper's own number beside
it (the papers measured their own tasks and models). Generated from the records and tables in
`data/results/{name}/` by `python -m adapterlab.report.document --profile {given} --write`; how the runs are
made and judged is in docs/protocol.md.

"""


def given_name(profile):
    """How the command line names a profile: a study by its file's name, a built-in profile by its own."""
    return Path(profile.source).name if profile.source else profile.name


def task_text(task, source=None):
    """A task as a page names it: a study's own data (`source`, Profile.task_sources) with its file (or hub
    dataset) and columns; any other task by its name."""
    if source is None:
        return f"`{task}`"
    base, options = files.parse_spec(source)
    data = base if base.startswith(files.HF_PREFIX) else Path(base).name
    text = " + ".join(options.get("text", files.DEFAULT_TEXT))
    return f"`{task}` ({data}: text {text}, label {options.get('label', [files.DEFAULT_LABEL])[-1]})"


def header(profile):
    """The page's opening: FINDINGS_HEADER for the default profile; for any other, what it studies (its task
    and data, its backbone, its study file) and how the page is made."""
    p = profiles.resolve(profile)
    if p.name == COMMITTED:
        return FINDINGS_HEADER
    title = f"the study `{p.name}` ({given_name(p)})" if p.source else f"the `{p.name}` profile"
    return PAGE_HEADER.format(title=title, description=p.description[:1].upper() + p.description[1:],
                              tasks=("Task " if len(p.tasks) == 1 else "Tasks ")
                              + ", ".join(task_text(t, p.task_sources.get(t)) for t in p.tasks),
                              backbone=p.backbone, name=p.name,
                              given=given_name(p))


def corrected(rows):
    """[(notebook, claim, verdict, verdict after Holm's correction over every tested claim of the rows)]: the
    exact checks are no hypotheses and stay out (checks)."""
    tested = [row for row in rows if not row[2].check]
    after = judge.holm([v for _, _, v in tested])
    return [(stem, title, v, h) for (stem, title, v), h in zip(tested, after)]


def checks(rows):
    """[(notebook, claim, verdict)] of the exact checks among the rows."""
    return [row for row in rows if row[2].check]


def _after_holm(h):
    """'inconclusive (...) (Holm p 0.196; one-sided 99.8% upper bound +0.4)': the corrected verdict, its adjusted
    p-value and the bound its test reads at the claim's Holm level."""
    if not h.judged:
        return f"{h} (no test: outside Holm's correction)"
    if math.isnan(h.holm_p):
        return str(h)
    return f"{h} (Holm p {p_text(h.holm_p)}; {h.decides_text()})" if h.diff.testable else f"{h} (Holm p {p_text(h.holm_p)})"


def claims_table(rows):
    """A markdown table of the claims (checks apart): each one's hypothesis as declared before the data, the split and
    what it averages over, the estimator with its degrees of freedom, the estimate with its 95% interval and the
    bound its test reads, the verdict before and after Holm's correction (adjusted p, and the bound at the
    corrected level) and the paper's own number."""
    out = ["| notebook | claim | declared hypothesis (5%) | split, n | estimator | here: estimate [95% CI]; "
           "the test's bound | verdict | after Holm | paper |", "|---|---|---|---|---|---|---|---|---|"]
    for stem, title, v, h in corrected(rows):
        out.append(f"| {stem} | {title} | {v.hypothesis()} | {v.split}, {v.size()} | {v.estimator()} | "
                   f"{v.interval()} | {v} | {_after_holm(h)} | {v.paper_text()} |")
    return out


def checks_table(rows):
    """A markdown table of the exact checks: what was measured, how, the result and the paper's number."""
    out = ["| notebook | check | measured on | here | result | paper |", "|---|---|---|---|---|---|"]
    out += [f"| {stem} | {title} | {v.split} | {v.numbers()} | {v} | {v.paper_text()} |"
            for stem, title, v in checks(rows)]
    return out


def planned(profile, root=None):
    """{family name: provenance.FamilyPlan}: each registered family's plan under `root`, made once for the whole
    page and handed to every part of it that asks what is stored (readings, declared_line, total_time, what to
    use)."""
    p = profiles.resolve(profile)
    return {f.name: provenance.family_plan(p, f, root) for f in families.registered()}


def readings(profile="default", root=None, plans=None):
    """(markdown lines of every training notebook's findings, [(notebook, claim, Verdict)]): each registered
    family's reading (Family.read) of its table under `root` (profiles.project_root), in the notebooks' order.
    `plans`: planned's answer, when the caller has it."""
    profile = profiles.resolve(profile)
    plans = planned(profile, root) if plans is None else plans
    out, rows = [], []
    for family in families.registered():
        df = None if family.read is None else table(profile, family, plans[family.name], root)
        if df is None or df.empty:
            continue
        budget = load(profile, f"{family.name}_budget_control", root)
        lines, found = family.read(df, budget)
        lines += budget_control(budget)
        seconds, runs, what = plans[family.name].from_scratch()
        cost = f"{runs} run(s), {seconds / 60:.0f} min, {what}" if runs else "the store lacks the current plan's runs"
        out += lines + [f"  *(from scratch: {cost})*", ""]
        rows += [(family.number, title, v) for title, v in found + not_run(profile, family)]
    return out, rows


class _Unfilled(dict):
    """The fields of a claim's words that only its runs would fill ({size}, {order}): shown as <size>."""

    def __missing__(self, key):
        return _Blank(key)


class _Blank(str):
    def __new__(cls, key):
        return super().__new__(cls, f"<{key}>")

    def __format__(self, spec):
        return str(self)


def not_run(profile, family):
    """[(claim, Verdict)] of the family's declared claims whose arms the profile did not plan
    (planning.unplanned_claims), one per task, each reading stats.NOT_RUN with the arms it lacks: listed, so that a
    claim is never dropped silently, and outside Holm's family, since nothing tested it."""
    p, out = profiles.resolve(profile), []
    for claim, missing in planning.unplanned_claims(p, family):
        lacks = " or ".join(dict.fromkeys(arm_text(arm) for arm in missing))
        verdict = judge.Verdict(claim.hypothesis, stats.NOT_RUN.format(lacks), claim.paper,
                                stats.Difference(math.nan, math.nan, math.nan, 0, "not run"), claim.margin,
                                claim.unit, claim.paper_value, log_ratio=claim.log_ratio, split=claim.split)
        out += [(claim.says.format_map(_Unfilled(task=task, a=claim.a, b=claim.b)), verdict) for task in p.tasks]
    return out


def arm_text(arm):
    """A claim's arm as the page names it: a method's name, or a plan entry by its run label ('top-k k=1')."""
    return arm if isinstance(arm, str) else method_label(method(arm[0], **arm[1]))


def table(profile, family, plan, root=None):
    """The table a family's reading reads: the CSV its claims read, else its own CSV (findings.judged), else,
    for a family that writes none (the lesson's), its table built from the records of its plan (`plan`, its
    provenance.FamilyPlan) the store holds (None when it holds none)."""
    found = judged(profile, family, root)
    if found is not None:
        return found
    stored = plan.stored_work()[0]
    return families.get(family).build(profiles.resolve(profile), stored, root).table if stored else None


def declared_line(profile, root=None, plans=None):
    """One sentence: when the hypotheses were fixed (claims.DECLARED_AT) against the records their claims read,
    notebook by notebook: how many of each one's stored records (its runs and scoring passes) predate them.
    `plans`: planned's answer, when the caller has it."""
    plans = planned(profile, root) if plans is None else plans
    before, total = {}, {}
    for family in families.registered():
        times = plans[family.name].created() if family.claims else []
        if times:
            before[family.number] = sum(when < claims.DECLARED_AT for when in times)
            total[family.number] = len(times)
    when = f"{claims.DECLARED_AT:%Y-%m-%d %H:%M} UTC"
    if not total:
        return ""
    if not any(before.values()):
        return (f"The hypotheses were fixed on {when}, before every record here ("
                + ", ".join(f"{k} {n}" for k, n in total.items()) + " records).")
    return (f"The hypotheses were first fixed on {when}, after part of the data; of each notebook's stored records "
            f"(runs and scoring passes), these predate them: "
            + ", ".join(f"{k} {before[k]} of {n}" for k, n in total.items())
            + " (docs/protocol.md says which).")


def tally(rows):
    """'28 tested claims, after Holm's correction over all of them: 2 reproduced, ...; 3 exact checks: ...' of
    [(notebook, claim, Verdict)]: the headline counts the corrected verdicts, and the checks apart."""
    tested = [row for row in corrected(rows) if row[3].in_family]
    counts = Counter(h.label for *_, h in tested)
    labels = [*stats.VERDICTS, *sorted(set(counts) - set(stats.VERDICTS))]  # then "awaiting ..."
    done = Counter(v.label for *_, v in checks(rows))
    untested = Counter("not run" if h.label.startswith("not run") else h.label for *_, h in corrected(rows)
                       if not h.in_family)
    return (f"{len(tested)} tested claims, after Holm's correction over all of them: "
            + (", ".join(f"{counts[k]} {k}" for k in labels if counts[k]) or "none")
            + (f"; {sum(untested.values())} claims outside it, untested: " + ", ".join(
                f"{n} {k}" for k, n in untested.items()) if untested else "")
            + (f"; {sum(done.values())} exact checks, outside it: " + ", ".join(f"{n} {k}" for k, n in done.items())
               if done else ""))


def report(profile="default", root=None, plans=None):
    """A page's body (FINDINGS.md's for the default profile): every reading from the tables under `root`, closed
    by the list of every paper claim with its verdict and the numbers behind it, what would decide the claims
    still inconclusive (power.section, from these records), the cost of making it all from scratch, and the
    edit that decides the most claims per hour; each family planned once for all of it (planned, or `plans`
    when the caller has them)."""
    profile = profiles.resolve(profile)
    plans = planned(profile, root) if plans is None else plans
    out, rows = readings(profile, root, plans)
    out = what_to_use(profile, root, page_path(profile, root).parent, plans) + out  # the page opens with the answer
    last = ""
    if rows:
        out += [f"**Every paper claim, its verdict and the numbers behind it** ({tally(rows)}; each hypothesis, "
                f"its split and its members declared in its family's module, adapterlab/families/; margin "
                f"±{stats.MARGIN * 100:g} points, fixed in advance: adapterlab.experiments.stats). "
                f"{declared_line(profile, root, plans)} Holm's correction runs over every conclusion a claim can draw: its "
                f"own declared test (the paper's conclusion) and the tests of the opposite ones, \"not reproduced\" "
                f"and, tested only once that one is shown, \"reversed\" (both read from the two-sided interval); so "
                f"the chance of any false conclusion, the paper's or the opposite, is at most 5%. With several "
                f"members, every member must hold (the largest p-value decides) and the opposite conclusions divide "
                f"their level among the members (Bonferroni). A claim is judged only on runs that learned (some "
                f"arm shown above the majority class by more than its margin) and, where none of its runs "
                f"converged, only with a budget control of its own that holds; else it reads \"not judged\", and a "
                f"claim whose arm the study did not plan reads \"not run\": neither is tested, and neither enters "
                f"the correction:", "", *claims_table(rows), ""]
        if checks(rows):
            out += ["**Exact checks** (measured without sampling, so no test and no place in Holm's correction):",
                    "", *checks_table(rows), ""]
        decides, last = power.section(profile, rows, root)
        out += decides
    out.append(total_time(profile, root, plans))
    if against := estimate_against_measured(profile, root, plans):
        out += ["", against]
    if last:
        out += ["", last]  # the page's last line: the edit that decides the most claims per hour
    return "\n".join(out).strip() + "\n"


def stored_work(profile, root=None, plans=None):
    """{notebook stem: (runs, scoring, planned)}: the stored records of each training notebook's plan under
    `root`, its training runs and the scoring passes its plan adds (04's spans), and how many units its plan
    makes (provenance.FamilyPlan.stored_work), each family planned once for notebook_seconds and total_time
    both (planned, or `plans` when the caller has them)."""
    plans = planned(profile, root) if plans is None else plans
    return {f.notebook: plans[f.name].stored_work() for f in families.registered()}


def notebook_seconds(profile, root=None, work=None):
    """{notebook stem: (seconds, device)}: what each training notebook's runs stored under `root` took to make,
    with the scoring its plan adds (04's spans; 0 when nothing is stored), and where the runs trained ("gpu"
    if any ran on CUDA, else "cpu"). `work`: stored_work's answer, when the caller has it already."""
    out = {}
    for stem, (records, scoring, _) in (work or stored_work(profile, root)).items():
        cuda = any(str(r.get("device", "cpu")).startswith("cuda") for r in records)
        out[stem] = (provenance.cost(records)[0] + provenance.scoring_seconds(scoring), "gpu" if cuda else "cpu")
    return out


def fresh_command(profile):
    """The command that makes a profile's records from scratch."""
    p = profiles.resolve(profile)
    if p.name == COMMITTED:
        return "make figures-fresh"
    return f"python -m adapterlab regenerate --profile {given_name(p)} --fresh"


def total_time(profile, root=None, plans=None):
    """One line: what making the profile's records from scratch costs (fresh_command), summed from the runs
    stored under `root` of every notebook that stores any, and the scoring their plans add; and how many of the
    units their plans make (estimate.units, as study init and the dry run count them) are stored. `plans`:
    planned's answer, when the caller has it."""
    work = stored_work(profile, root, plans)
    seconds = notebook_seconds(profile, root, work)
    missing = [f.name for f in families.registered() if f.study and not seconds[f.notebook][0]]
    listed = ", ".join(f"{stem[:2]} {s / 60:.0f}" for stem, (s, _) in seconds.items() if s) or "none stored"
    total = sum(s for s, _ in seconds.values())
    where = provenance.machines([r for runs, _, _ in work.values() for r in runs])
    added = [r for _, passes, _ in work.values() for r in passes]
    scoring = [r for r in added if "eval_seconds" in r]  # passes over stored adapters; the others time steps
    timed = [r for r in added if "eval_seconds" not in r]
    scored = (f"; with {len(scoring)} scoring pass(es) of stored adapters, "
              f"{provenance.scoring_seconds(scoring) / 60:.0f} min" if scoring else "")
    scored += (f"; with {len(timed)} timing run(s), {provenance.scoring_seconds(timed) / 60:.0f} min" if timed else "")
    stored = sum(len(runs) + len(passes) for runs, passes, _ in work.values())
    planned = sum(n for _, _, n in work.values())
    units = f"; {stored:,} of the {planned:,} units their plans make stored" if planned else ""
    return (f"**From scratch in all** (`{fresh_command(profile)}`): {total / 3600:.1f} h of stored "
            f"training runs (minutes per notebook: {listed}), as timed on the machines that made them "
            f"({where}; a run trained beside others counts for its share: run_seconds / workers{scored}){units}"
            + (f"; {', '.join(missing)} not stored yet, so more" if missing else "") + ".")


def estimate_against_measured(profile, root=None, plans=None):
    """One line for a study that keeps the speed `study init` sized it at (Profile.sized_on): each family's
    estimate at that speed, each stored unit of its plan priced as init priced it (estimate.seconds), beside what
    those units took (notebook_seconds): like for like while a study is half made, and init's whole estimate once
    every unit is stored. "" without that speed, or before any run is stored."""
    p = profiles.resolve(profile)
    if p.sized_on is None:
        return ""
    plans = planned(p, root) if plans is None else plans
    measured = notebook_seconds(p, root, stored_work(p, root, plans))
    rows = []
    for f in families.registered():
        took = measured[f.notebook][0]
        prices = [estimate.seconds(u, p.sized_on) for u in plans[f.name].planned if u.stored]
        if took and prices and None not in prices:
            rows.append((f.number, sum(prices), took))
    if not rows:
        return ""
    est, took = sum(e for _, e, _ in rows), sum(t for *_, t in rows)
    parts = [f"{number} {e / 60:.0f} against {t / 60:.0f} ({t / e:.2f}x)" for number, e, t in rows]
    t = p.sized_on
    return (f"**Estimate against measured**, minutes per notebook (the plan's every unit priced at the speed "
            f"`study init` measured and sized this study at: {t.step_seconds:.3f} s a training step of "
            f"{t.batch_size} x {t.max_length} tokens on {t.device}; its pilot not included): {'; '.join(parts)}; in "
            f"all {est / 60:.0f} against {took / 60:.0f} ({took / est:.2f}x).")


def claims_summary(profile="default", root=None, plans=None):
    """The README's short table: each paper claim and its verdict, the full numbers being in FINDINGS.md
    (`plans`: planned's answer, when the caller has it)."""
    rows = readings(profile, root, plans)[1]
    out = [f"{tally(rows)} (margin ±{stats.MARGIN * 100:g} points, fixed in advance).", "",
           "| notebook | claim | declared hypothesis | split | verdict | after Holm | paper |",
           "|---|---|---|---|---|---|---|"]
    out += [f"| {stem} | {title} | {v.hypothesis()} | {v.split} | {v} | {h} | {v.paper_text()} |"
            for stem, title, v, h in corrected(rows)]
    out += [f"| {stem} | {title} | {v.hypothesis()} | {v.split} | {v} | (a check, outside Holm) | {v.paper_text()} |"
            for stem, title, v in checks(rows)]
    return "\n".join(out) + "\n"


def findings_document(profile="default", root=None, plans=None):
    """A profile's page (FINDINGS.md for the default profile) as the records under `root` give it, each family
    planned once for all of it (planned, or `plans` when the caller has them)."""
    profile = profiles.resolve(profile)
    return header(profile) + report(profile, root, plans)


def page_path(profile, root=None):
    """Where a profile's page goes, root as profiles.project_root(root) gives it: <root>/FINDINGS.md for the
    default profile; <root>/findings/<name>.md for any other (a study, smoke, paper), beside its data and figures."""
    p, root = profiles.resolve(profile), profiles.project_root(root)
    return root / "FINDINGS.md" if p.name == COMMITTED else root / PAGES / f"{p.name}.md"


def write(profile="default", root=None):
    """Write the profile's page (page_path) from the records under `root`, and for the default profile the
    README's claims table too (between BEGIN and END); return the page's path."""
    from ..methods.writing import atomic_write
    p, root = profiles.resolve(profile), profiles.project_root(root)
    path, plans = page_path(p, root), planned(p, root)  # one plan per family for the page and the README both
    if p.name != COMMITTED:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, findings_document(p, root, plans))
        return path
    readme = root / "README.md"
    text = readme.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no claims markers; put {BEGIN} and {END} where the table goes")
    atomic_write(path, findings_document(p, root, plans))
    atomic_write(readme, pattern.sub(lambda _: f"{BEGIN}\n{claims_summary(p, root, plans)}{END}", text))
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m adapterlab.report.document", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default", help="smoke | default | paper | a study file (.toml)")
    parser.add_argument("--out", help="the data/results/ read and the page written under this directory "
                                      "(default: the checkout)")
    parser.add_argument("--write", action="store_true",
                        help="write the page: FINDINGS.md and the README's claims table (default profile), else "
                             "findings/<name>.md")
    args = parser.parse_args()
    if args.write:
        write(args.profile, args.out)
    print(report(args.profile, args.out))
