"""switchyard's pure record transformations: schema, actions, sources, rewrites, publishing."""

# Bumped whenever a stage's output for the same input changes: it is part of every stage's content key.
__version__ = "0.1.0"
