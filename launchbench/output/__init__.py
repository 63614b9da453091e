"""What results become: the compare document's schema, its text table, the Markdown/HTML/PNG
report, the launch breakdown's and history's text, the asv site, asv result files and asv's configs
and command line. Imports the layers below
(base, workloads, environments, engine); docs/architecture.md has the layers.
"""
