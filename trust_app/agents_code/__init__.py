"""Agents as code: the organisation's agents in one YAML file, exported, planned, applied.

``schema`` is the file's shape (pure), ``export`` writes the file from the database,
``plan`` lists what applying a file would change, ``apply`` makes those changes in one
transaction with an audit row per change.
"""
