"""Results: the JSON documents of keel's commands, with attribute access."""

from collections.abc import Mapping
import copy


def _wrap(value):
    if isinstance(value, dict):
        return Result(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class Result(Mapping):
    """A keel document (what the CLI prints with --json), read as attributes or keys.

    result.devices[0].peak_reserved == result["devices"][0]["peak_reserved"];
    to_dict() gives the plain document.
    """

    __slots__ = ("_data",)

    def __init__(self, data):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name):
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError("keel results are read-only")

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __dir__(self):
        return sorted(set(self._data) | {"to_dict", "to_pandas"})

    def __repr__(self):
        keys = ", ".join(list(self._data)[:8])
        more = ", ..." if len(self._data) > 8 else ""
        return f"<keel {type(self).__name__} {{{keys}{more}}}>"

    def to_dict(self):
        """The document as plain dicts and lists (a deep copy)."""
        return copy.deepcopy(self._data)

    def _rows(self):
        return [self._data]

    def to_pandas(self):
        """The document's rows as a pandas DataFrame (raises ImportError without pandas)."""
        import pandas

        return pandas.DataFrame(self._rows())


def _scalars(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_scalars(v, f"{prefix}{k}."))
        elif not isinstance(v, list):
            out[f"{prefix}{k}"] = v
    return out


class DeviceResult(Result):
    """A document with one entry per device (replay, explain): a row per device."""

    __slots__ = ()

    def _rows(self):
        return [_scalars(d) for d in self._data["devices"]]


class Advice(Result):
    """keel mem advise's document: a row per (device, mode, candidate)."""

    __slots__ = ()

    def _rows(self):
        rows = []
        for d in self._data["devices"]:
            for m in d.get("modes", []):
                for i, c in enumerate(m["candidates"]):
                    row = {"device": d["device"], "mode": m["mode"], "rank": i + 1}
                    row.update(_scalars(c))
                    rows.append(row)
        return rows
