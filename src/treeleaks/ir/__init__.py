"""The intermediate representation every attack reads, and what is said about its data: the
forest IR (`model.py`, `ReleasedModel` and its trees), the JSON shapes of model and schema
files (`formats.py`, pydantic, loaded only to parse one) and the reading of JSON files
(`json_files.py`), the features' kinds, ranges and groups (`schema.py`), the columns a frame
is scored on (`schema_columns.py`), the groups `inspect` suggests (`schema_hints.py`), and
the adversary's side knowledge (`knowledge.py`). It reads `treeleaks.runtime` and no other
part of treeleaks; this file imports nothing, so loading one module loads only what that
module imports."""
