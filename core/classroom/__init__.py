"""A class predicts together (issue #55): the store of classes, checks asked and predictions, and its guards.

- store.py: the tables, through SQLAlchemy Core (SQLite in WAL mode by default; a PostgreSQL URL works the same way),
  the schema's version and its migrations, the 24-hour expiry;
- guard.py: class codes and teacher secrets (from ``secrets``), the rate limits, the caps on input, and the
  guessing arithmetic that docs/TEACHERS.md states;
- tally.py: a check's predictions as the teacher's view shows them (the distribution, then right / close).

No gradio here: demo/kit/classroom.py serves it over HTTP.
"""
