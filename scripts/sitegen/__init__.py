"""Build-time content for the course site, computed by the ``roofline`` package.

Independent of MkDocs on purpose: Material for MkDocs reaches end of life in
2027 and its successor has no plugin API, so everything here is plain Python
that ``scripts/build_figures.py`` runs, and ``hooks/figures.py`` only glues it
into the MkDocs build.

Modules, lowest first (each imports only from those above it):

- ``output``     byte-exact files: generated-file headers, atomic writes, write-if-changed.
- ``context``    the spec set read fresh from disk and the measurements; ``Focus``, a page's chosen GPU and models.
- ``page``       what a page module hands the build: values, tables, figures (``PageContent``).
- ``tables``     Markdown tables for the hardware and model references.
- ``values``     formatting helpers for the numbers prose quotes.
- ``charts``     Altair chart builders, as Vega-Lite dicts.
- ``render``     Vega-Lite -> SVG (vl-convert) and the figure snippets that embed them.
- ``pages``      one module per page (``pages/prefill_vs_decode.py`` is chapter 1), found by themselves.
- ``shortcodes`` ``{{ n.NAME }}``, ``{{ md.NAME }}`` and ``{{ fig.NAME }}``; per-page values, figure letters.
- ``vendor``     which files of node_modules the site serves (Vega, KaTeX).
- ``generate``   the whole run: every page module computes in memory, then what changed is written.
"""
