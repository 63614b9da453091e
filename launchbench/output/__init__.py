"""What results become: the compare document's schema, its text table, the Markdown/HTML/PNG
report, the asv site, asv result files and asv's configs and command line. Imports the layers below
(base, workloads, environments, engine); docs/architecture.md has the layers.
"""
