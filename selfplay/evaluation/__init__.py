"""Evaluation and reporting (docs/design/architecture.md, layer 5): evaluating run directories, comparisons of
schemes over seeds, figures and report.md."""
