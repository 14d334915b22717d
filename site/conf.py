"""Sphinx configuration of the course website (built by `make site`, see adapterlab/course/site.py).

Everything the pages load is local, so the site builds and works without a network: the theme
is a pip-installed package (nothing is downloaded at build time), MathJax comes from a PyPI
package and plotly.js from the plotly package, both copied into _static/ by the build.
"""
project = "adapterlab: adapter layers for transformers"
author = "adapterlab"
copyright = "adapterlab authors"

extensions = ["myst_nb"]
# Render the outputs stored in the executed notebooks; never start a kernel.
nb_execution_mode = "off"
# No CDN scripts for ipywidgets: the build drops widget views (their text fallback stays).
nb_ipywidgets_js = {}
# Plotly outputs carry JSON and HTML: myst-nb renders the HTML, which draws through the shared
# _static/plotly.min.js (loaded in each page's head, before the outputs' scripts run).
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = "Adapter layers, step by step"
html_static_path = ["_static"]
html_js_files = ["plotly.min.js"]
html_css_files = ["site.css"]
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
}
# the theme reads its light/dark mode from here (empty, it logs a console error on every page)
html_context = {"default_mode": "auto"}
# a favicon of its own, or the browser asks for /favicon.ico and logs the 404
html_favicon = "favicon.svg"
mathjax_path = "mathjax/tex-mml-chtml.js"

exclude_patterns = ["_build", "**.ipynb_checkpoints"]
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]
