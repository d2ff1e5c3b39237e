"""Build-time content for the course site, computed by the ``roofline`` package.

Independent of MkDocs on purpose: Material for MkDocs reaches end of life in
2027 and its successor has no plugin API, so everything here is plain Python
that ``scripts/build_figures.py`` runs, and ``hooks/figures.py`` only glues it
into the MkDocs build.

Modules, lowest first (each imports only from those above it):

- ``output``     byte-exact files: generated-file headers, atomic writes, write-if-changed.
- ``context``    the spec set read fresh from disk, and the chapter's chosen GPU and models.
- ``tables``     Markdown tables: the H100 table, hardware and model references.
- ``values``     every number the prose quotes, as formatted text keyed by name.
- ``charts``     the four Altair charts, as Vega-Lite dicts.
- ``render``     Vega-Lite -> SVG (vl-convert) and the figure snippets that embed them.
- ``shortcodes`` ``{{ n.NAME }}`` and ``{{ md.NAME }}`` expansion; fails loudly on unknown names.
- ``vendor``     which files of node_modules the site serves (Vega, KaTeX).
- ``generate``   the whole run: compute everything in memory, then write what changed.
"""
