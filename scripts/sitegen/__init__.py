"""Build-time content for the course site, computed by the ``roofline`` package.

Independent of MkDocs on purpose: Material for MkDocs reaches end of life in
2027 and its successor has no plugin API, so everything here is plain Python
that ``scripts/build_figures.py`` runs, and ``hooks/figures.py`` only glues it
into the MkDocs build.

Modules, lowest first (each imports only from those above it):

- ``output``     byte-exact files: generated-file headers, atomic writes, write-if-changed.
- ``context``    the spec set read fresh from disk.
- ``page``       what a page module hands the build: values, tables, figures (``PageContent``).
- ``tables``     Markdown tables with literal cells, and the sources listed under a table.
- ``values``     formatting helpers for the numbers prose quotes.
- ``figures``    the course's figure frame (``figure_spec``), palette and size, for every page's charts.
- ``render``     Vega-Lite -> SVG (vl-convert) and the figure snippets that embed them.
- ``pages``      the one loader: every page folder under docs/ (page, page.py, programs, calculators, tests).
- ``shortcodes`` ``{{ n.NAME }}``, ``{{ md.NAME }}`` and ``{{ fig.NAME }}``; per-page values, figure letters.
- ``vendor``     which files of node_modules the site serves (Vega, KaTeX).
- ``widgets``    the Run cell's and the calculator's markup, and the calculator's output kinds.
- ``navigation`` the chapters as the nav lists them: the home page's list, and the check that none is missing.
- ``generate``   the whole run: every page module computes in memory, then what changed is written.
"""
