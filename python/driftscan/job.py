"""A job's settings from keyword arguments, by their job-file (JSON) names.

The job file's fields (docs/protocol.md) live in blocks: ``registration``,
``averaging``, ``scan``, ``execution``, ... A keyword is a field's key when
that key names one field (``pyramid_levels=4``, ``method="median"``), its
path with the block (``**{"scan.dwell": 2e-6}``) or a block given as a dict
(``scan={"dwell": 2e-6}``). The engine checks every value and names the
field when one is wrong (ValueError).
"""
import json

from . import _engine

_FIELDS = _engine.job_fields()
_BY_PATH = {f["path"]: f for f in _FIELDS}
_BY_KEY = {}
for _f in _FIELDS:
    _BY_KEY.setdefault(_f["key"], []).append(_f)
_BLOCKS = sorted({f["block"] for f in _FIELDS if f["block"]})


def fields():
    """Every job field: a list of dicts with block, key, path, help, default."""
    return [dict(f, default=json.loads(f["default"])) for f in _FIELDS]


def _field_for(name):
    if name in _BY_PATH:
        return _BY_PATH[name]
    matches = _BY_KEY.get(name, [])
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ValueError(f"{name}: several job fields have this name ("
                         + ", ".join(f["path"] for f in matches) + "): give the block, e.g. "
                         + f"**{{'{matches[0]['path']}': ...}}")
    raise ValueError(f"{name}: no job field of this name (driftscan.job.fields() lists them)")


def _plain(value):
    """A value as JSON takes it (numpy scalars and arrays, tuples)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, (list,)):
        return [_plain(v) for v in value]
    return value


def build(command, settings):
    """The job (a dict in job-file form) for `command` with `settings` set."""
    job = {"driftscan_job": 1, "command": command}
    for name, value in settings.items():
        if name in _BLOCKS and isinstance(value, dict):
            for key, v in value.items():
                _set(job, _field_for(f"{name}.{key}"), v)
            continue
        _set(job, _field_for(name), value)
    return job


def _set(job, field, value):
    if field["block"]:
        job.setdefault(field["block"], {})[field["key"]] = _plain(value)
    else:
        job[field["key"]] = _plain(value)


def checked(job, source):
    """The job as the engine reads it (defaults filled in); ValueError naming a bad field."""
    return json.loads(_engine.check_job(json.dumps(job), source))
