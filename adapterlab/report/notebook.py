"""What a family's notebook does with its family, in one call: make what the store lacks, build and write its
tables, draw and save its figures; then its reading.

    from adapterlab.report import notebook
    page = notebook.prepare("05", profile, root=root, fresh=fresh)   # runs, tables, figures
    page.table, page.budget, page.paths                               # what the notebook shows and explores
    display(Markdown("\\n".join(notebook.reading(page))))           # the reading and the budget controls

Each notebook builds one step of its lesson by hand first; this is the rest, the same for every family.
"""
from dataclasses import dataclass, field

import pandas as pd

from ..experiments import families, profiles, running
from . import figures, findings, tables


@dataclass
class Page:
    """A family's notebook's results: its tables (result: tables.FamilyResult), the table its figures draw
    (table), the one its claims read (judged: layer removal's held-out spans, else the same), its budget
    controls and the figure files written."""
    family: families.Family
    result: tables.FamilyResult
    table: pd.DataFrame
    judged: pd.DataFrame
    budget: pd.DataFrame
    paths: list = field(default_factory=list)


def prepare(family, profile, root=None, fresh=False, progress=True):
    """Train (and score) what the store under `root` lacks for the family's plan (running.run_plan), build its
    tables from the records that returns (tables.from_records: the plan is made once) and write them
    (tables.write), and save its figures (figures.save); the Page."""
    family, profile = families.get(family), profiles.resolve(profile)  # a notebook's name: resolved once, here
    records = running.run_plan(profile, family, fresh=fresh, root=root, progress=progress)
    result = tables.from_records(family, profile, records, root)
    tables.write(result, profile, root)
    paths = [p for name in family.figures for p in figures.save(name, result.table, profile, root)]
    judged = result.extra.get(family.judged_table, result.table)
    return Page(family, result, result.table, judged, result.budget, paths)


def reading(page):
    """The family's reading of its page (Family.read), then its budget controls under budget rule 3."""
    return (findings.reading(page.family, page.judged, page.budget)
            + (findings.budget_control(page.budget) or ["(this profile trains no budget control here)"]))
