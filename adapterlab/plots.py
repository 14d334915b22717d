"""Figure builders: seaborn/matplotlib for static images, plotly for interactive HTML.

Every figure is also written under figures/<profile>/ because widget state does
not survive a headless run. Interactive HTML files share one local copy of
plotly.js beside them (no CDN: they work offline; no megabytes inlined per file).
"""
from pathlib import Path

from . import profiles


def save_figure(fig, name, profile=None):
    """Write `fig` to figures/<profile>/<name>.png (matplotlib) or .html (plotly); return the path."""
    folder = profiles.figures_dir(profiles.get(profile) if not isinstance(profile, profiles.Profile) else profile)
    if hasattr(fig, "write_html"):  # plotly
        path = folder / f"{name}.html"
        fig.write_html(path, include_plotlyjs="directory", full_html=True)
    else:  # matplotlib Figure (or a seaborn grid, which has .figure)
        figure = getattr(fig, "figure", fig)
        path = folder / f"{name}.png"
        figure.savefig(path, dpi=150, bbox_inches="tight")
    return Path(path)
