"""What ``dpfair assess`` does: read a CSV or Parquet file with DuckDB, count the (group, y_true, y_pred) table, release
it through :class:`~dpfair.metrics.PrivateMetricFrame`, record what was spent and write the table and the page.

The command itself (its options and help) is registered in :mod:`dpfair.cli`; a user error here raises
:class:`AssessError`, which the command prints as one line (``error: ... hint: ...``) before exiting with status 2.
Only the standard library and typer are imported up front: DuckDB, pandas and the metrics load when an assessment runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

import typer

__all__ = ["DEFAULT_METRICS", "LEDGER_ENV", "AssessError", "run_assessment"]

#: the metrics `dpfair assess` computes when no --metric is given
DEFAULT_METRICS = ("selection_rate", "true_positive_rate", "false_positive_rate", "accuracy_score")
#: where `dpfair assess` keeps its record of what was spent (one JSON object per line), unless --ledger says otherwise
LEDGER_ENV = "DPFAIR_ASSESS_LEDGER"


class AssessError(Exception):
    """A user error of ``dpfair assess``: what is wrong (naming the option or column) and the fix.

    Parameters
    ----------
    message : str
        What is wrong.
    hint : str
        How to fix it.
    """

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _fail(message: str, hint: str) -> NoReturn:
    raise AssessError(message, hint)


def _assess_words(text: str, y_true: str, y_pred: str) -> str:
    """A library message about PrivateMetricFrame's arguments, in the words of `dpfair assess`."""
    import re

    words = {
        "y_true": f"--y-true column {y_true!r}",
        "y_pred": f"--y-pred column {y_pred!r}",
        "sensitive_features": "--sensitive",
        "sensitive feature": "--sensitive column",
        "confidence_level": "--confidence",
        "metrics": "--metric",
        "noise_random_state": "--seed",
    }
    text = re.sub(r"\b(y_true|y_pred|sensitive_features|sensitive feature|confidence_level|metrics|noise_random_state)\b",
                  lambda m: words[m.group(1)], text)
    text = re.sub(r"\b(groups|bounds|epsilon)=", r"--\1 ", text)
    return re.sub(r"^(groups|bounds|epsilon)\b", r"--\1", text)


def _assess_ledger_path(ledger: Path | None) -> Path:
    if ledger is not None:
        return ledger
    if os.environ.get(LEDGER_ENV):
        return Path(os.environ[LEDGER_ENV])
    return Path.home() / ".dpfair" / "assess-spent.jsonl"


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _assess_source(predictions: Path, sensitive: list[str]) -> str:
    """The DuckDB table expression that reads PREDICTIONS (Parquet by its suffix, else CSV; ``sensitive``: the columns
    read as text, so that DuckDB's type sniffing never fails on a label such as ">50K")."""
    path = _sql_string(str(predictions))
    if predictions.suffix.lower() in (".parquet", ".pq"):
        return f"read_parquet({path})"
    types = ", ".join(f"{_sql_string(c)}: 'VARCHAR'" for c in sensitive)
    return f"read_csv({path}, header = true, types = {{{types}}})" if sensitive else f"read_csv({path}, header = true)"


#: the codes of a label that is not 0/1 (computed in DuckDB, so that only the kind of a bad value reaches Python)
_MISSING, _TEXT, _NUMBER = -2, -1, -3
_LABEL_KINDS = {
    _MISSING: ("has missing values (empty, NA, NaN or NULL) on some rows", "drop or fill those rows before assessing."),
    _TEXT: ("holds text labels, not 0/1", "give the positive class as pos_label (every other label counts as 0), or "
            "recode the column to 0/1 before assessing."),
    _NUMBER: ("holds numbers other than 0 and 1", "give the positive class as pos_label, recode the column to 0/1, or "
              "assess a real-valued metric with --bounds."),
}


def _label_sql(column: str, pos_label: str | None, numeric: bool = False) -> str:
    """SQL of a 0/1 label (or a negative code for a missing, text or other numeric value); ``numeric``: the column
    has a number type (Parquet), read as it is, else it is read as text."""
    name = _sql_name(column)
    if numeric and pos_label is None:
        value = f"CAST({name} AS DOUBLE)"
        return (f"CASE WHEN {name} IS NULL OR isnan({value}) THEN {_MISSING} WHEN {value} IN (0, 1) "
                f"THEN CAST({value} AS INTEGER) ELSE {_NUMBER} END")
    text = f"trim(CAST({name} AS VARCHAR))"
    missing = f"{_sql_name(column)} IS NULL OR {text} = '' OR lower({text}) IN ('na', 'nan', 'null', 'none', 'n/a')"
    if pos_label is not None:
        return f"CASE WHEN {missing} THEN {_MISSING} WHEN {text} = {_sql_string(pos_label)} THEN 1 ELSE 0 END"
    number = f"TRY_CAST({text} AS DOUBLE)"
    return (f"CASE WHEN {missing} THEN {_MISSING} WHEN {number} IN (0, 1) THEN CAST({number} AS INTEGER) "
            f"WHEN {number} IS NOT NULL THEN {_NUMBER} ELSE {_TEXT} END")


def _value_sql(column: str, numeric: bool = False) -> str:
    """SQL of a real value (NULL when missing or not a finite number); ``numeric``: a number column, read as it is."""
    number = (f"CAST({_sql_name(column)} AS DOUBLE)" if numeric
              else f"TRY_CAST(trim(CAST({_sql_name(column)} AS VARCHAR)) AS DOUBLE)")
    return f"CASE WHEN isfinite({number}) THEN {number} END"


#: DuckDB's number types (a column of one of them is read as it is, not through text)
_NUMBER_TYPES = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                           "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL", "BOOLEAN"})

#: per-row value of each real-valued metric, in SQL (as :func:`dpfair.metrics._core.per_row_values`)
_PER_ROW_SQL = {
    "mean_squared_error": "(({t}) - ({p})) * (({t}) - ({p}))",
    "mean_absolute_error": "abs(({t}) - ({p}))",
    "mean_prediction": "({p}) - {lo}",
}
#: ``r2_score``'s three per-row values (as :func:`dpfair.metrics._r2.per_row`): the squared residual in units of
#: ``w ** 2`` and the centred ``y_true`` in units of ``w / 2`` and its square (``w`` the width of the bounds, ``m`` the
#: middle)
_R2_SQL = ("((({t}) - ({p})) / {w}) * ((({t}) - ({p})) / {w})", "(({t}) - {m}) / ({w} / 2)",
           "((({t}) - {m}) / ({w} / 2)) * ((({t}) - {m}) / ({w} / 2))")


def _sum_columns(real_metrics: list[str]) -> dict[str, Any]:
    """The column(s) of per-cell sums of every real-valued metric: ``__sum_i``, or three ``__sum_i_j`` for r2."""
    return {m: [f"__sum_{i}_{j}" for j in range(3)] if m == "r2_score" else f"__sum_{i}"
            for i, m in enumerate(real_metrics)}


def _sums_sql(real_metrics: list[str], t: str, p: str, bounds: tuple[float, float]) -> str:
    """``sum(...) AS __sum_i`` (``__sum_i_j`` for r2's three sums) of every real-valued metric's per-row value."""
    lo, hi = (float(b) for b in bounds)
    values = {"t": t, "p": p, "lo": repr(lo), "w": repr(hi - lo), "m": repr((lo + hi) / 2)}
    parts = []
    for (metric, names) in _sum_columns(real_metrics).items():
        if metric == "r2_score":
            parts += [f"sum({sql.format(**values)}) AS {name}" for sql, name in zip(_R2_SQL, names, strict=True)]
        else:
            parts.append(f"sum({_PER_ROW_SQL[metric].format(**values)}) AS {names}")
    return ", ".join(parts)


def _assess_counts(con: object, source: str, y_true: str, y_pred: str, sensitive: list[str],
                   count_metrics: bool = True, real_metrics: list[str] | None = None,
                   bounds: tuple[float, float] | None = None, pos_label: str | None = None,
                   numeric: frozenset[str] = frozenset()) -> object:
    """The small table every metric needs, computed in DuckDB in one pass over the file (memory does not grow with
    rows): one row per (sensitive..., y_true, y_pred) cell with its count, the per-cell sums of every real-valued
    metric's per-row value, and the numbers of rows whose value is missing or outside ``bounds`` (checked in Python,
    named by column, never shown).  Labels are 0/1, or a negative code for a missing, text or other numeric value.
    ``numeric``: the columns with a number type (read as they are, not through text)."""
    groups = ", ".join(f"trim(CAST({_sql_name(c)} AS VARCHAR)) AS {_sql_name(c)}" for c in sensitive)
    labels = (f"{_label_sql(y_true, pos_label, y_true in numeric)} AS __y_true, "
              f"{_label_sql(y_pred, pos_label, y_pred in numeric)} AS __y_pred"
              if count_metrics else "0 AS __y_true, 0 AS __y_pred")
    extra = ""
    if real_metrics:
        assert bounds is not None
        t, p = _value_sql(y_true, y_true in numeric), _value_sql(y_pred, y_pred in numeric)
        lo, hi = (repr(float(b)) for b in bounds)
        sums = _sums_sql(real_metrics, t, p, bounds)
        checks = ", ".join(
            f"count(*) FILTER (WHERE {v} IS NULL) AS __bad_{n}, count(*) FILTER (WHERE {v} < {lo} OR {v} > {hi}) AS __out_{n}"
            for n, v in (("t", t), ("p", p)))
        extra = f", {sums}, {checks}"
    query = f"SELECT {groups}, {labels}, count(*) AS __count{extra} FROM {source} GROUP BY ALL"
    return con.execute(query).df()


def _check_counts(counts: object, y_true: str, y_pred: str, bounds: tuple[float, float] | None) -> None:
    """Refuse a table with a bad label or value, naming the column and the kind of value (never the value)."""
    for option, column, code in (("--y-true", y_true, "__y_true"), ("--y-pred", y_pred, "__y_pred")):
        for kind, (what, hint) in _LABEL_KINDS.items():
            if (counts[code] == kind).any():
                _fail(f"{option} column {column!r} {what}.", hint)
    for option, column, suffix in (("--y-true", y_true, "t"), ("--y-pred", y_pred, "p")):
        if f"__bad_{suffix}" not in counts.columns:
            continue
        if counts[f"__bad_{suffix}"].sum() > 0:
            _fail(f"{option} column {column!r} has missing or non-numeric values on some rows (a real-valued metric "
                  "needs a number on every row).", "drop or fill those rows before assessing.")
        if counts[f"__out_{suffix}"].sum() > 0:
            _fail(f"{option} column {column!r} holds values outside the declared --bounds {bounds[0]:g},{bounds[1]:g}.",
                  "declare bounds that contain every possible value (public knowledge), or clip the values first.")


def run_assessment(
    predictions: Path | None, y_true: str | None, y_pred: str | None, sensitive: list[str] | None, epsilon: float | None,
    groups: list[str] | None, metric: list[str] | None, bounds: str | None, confidence: float, undeclared: str,
    seed: int | None, ledger: Path | None, out: Path, quiet: bool, control: list[str] | None = None,
    control_groups: list[str] | None = None, pos_label: str | None = None,
) -> None:
    """Run ``dpfair assess`` with its options (see :func:`dpfair.cli.assess`): a CSV table and an HTML page in ``out``.

    Parameters
    ----------
    predictions : pathlib.Path or None
        CSV or Parquet file with one row per person (required).
    y_true, y_pred : str or None
        Columns of true labels and predictions (required).
    sensitive : list of str or None
        Sensitive columns (required; several: intersectional groups).
    epsilon : float or None
        Privacy parameter of the whole assessment (required).
    groups : list of str or None
        Declared labels, comma-separated, one entry per sensitive column.
    metric : list of str or None
        Metrics (names of :data:`dpfair.metrics.SUPPORTED_METRICS`; default :data:`DEFAULT_METRICS`).
    bounds : str or None
        ``LO,HI``: public range of both columns, for the real-valued metrics.
    confidence : float
        Interval coverage.
    undeclared : str
        ``raise`` or ``other``.
    seed : int or None
        Seed for reproducible, not hardened noise.
    ledger : pathlib.Path or None
        The JSON-lines record of what was spent (default ``$DPFAIR_ASSESS_LEDGER`` or ``~/.dpfair/assess-spent.jsonl``).
    out : pathlib.Path
        Output folder.
    quiet : bool
        No progress lines.
    control : list of str or None
        Control columns (fairlearn's ``control_features``): every metric and summary is computed within each of their
        levels; they are counted in DuckDB's group-by with the sensitive columns and released like them.
    control_groups : list of str or None
        Declared levels, comma-separated, one entry per control column (required with a finite epsilon).
    pos_label : str or None
        The label of the positive class in ``y_true`` and ``y_pred``, compared as text after trimming (every other
        label counts as 0); without it the labels must be 0/1.

    Raises
    ------
    AssessError
        On a user error: what is wrong (naming the option or column) and the fix.
    """
    def progress(text: str) -> None:
        if not quiet:
            typer.echo(f"assess: {text}", err=True)

    metrics, bounds_pair, control = _check_options(predictions, y_true, y_pred, sensitive, epsilon, groups, metric,
                                                   bounds, undeclared, out, control, control_groups)
    assert predictions is not None and y_true is not None and y_pred is not None and sensitive and epsilon is not None
    ledger_path = _writable_ledger(ledger)

    import duckdb

    progress(f"reading {predictions}")
    con = duckdb.connect()
    numeric = _read_header(con, predictions, y_true, y_pred, sensitive, control)
    source = _assess_source(predictions, sensitive + control + [y_true, y_pred])  # these columns read as text
    declared = _declared_groups(groups, control_groups, sensitive, control)
    scope = f"{predictions.name}: {y_true} vs {y_pred} by {' x '.join(sensitive)}"  # the file's name: never a local path
    if control:
        scope += f", within {' x '.join(control)}"
    columns = {"sensitive": list(sensitive), "y_true": y_true, "y_pred": y_pred}
    frame, caught = _release_table(con, source, predictions, y_true, y_pred, sensitive, control, epsilon, declared,
                                   confidence, seed, undeclared, metrics, bounds_pair, pos_label, numeric, progress)
    _write_outputs(frame, caught, epsilon, seed, ledger_path, predictions, columns, out, scope, progress)


def _check_options(
    predictions: Path | None, y_true: str | None, y_pred: str | None, sensitive: list[str] | None, epsilon: float | None,
    groups: list[str] | None, metric: list[str] | None, bounds: str | None, undeclared: str, out: Path,
    control: list[str] | None, control_groups: list[str] | None,
) -> tuple[list[str], tuple[float, float] | None, list[str]]:
    """Refuse missing or inconsistent options; return the metrics, the declared bounds and the control columns."""
    for value, option in ((predictions, "PREDICTIONS"), (y_true, "--y-true"), (y_pred, "--y-pred"),
                          (sensitive, "--sensitive"), (epsilon, "--epsilon")):
        if not value:
            _fail(f"{option} is required.", "run `dpfair assess --help`.")
    assert predictions is not None and y_true is not None and y_pred is not None and sensitive and epsilon is not None
    from dpfair.metrics import SUPPORTED_METRICS

    metrics = list(metric) if metric else list(DEFAULT_METRICS)
    for name in metrics:
        if name not in SUPPORTED_METRICS:
            _fail(f"--metric {name!r} is not supported.", f"choose from: {', '.join(SUPPORTED_METRICS)}.")
    bounds_pair = None
    if bounds is not None:
        try:
            lo, hi = (float(b) for b in bounds.split(","))
        except ValueError:
            _fail(f"--bounds must be two numbers LO,HI, got {bounds!r}.", "e.g. --bounds=0,1 (use '=' before a negative number).")
        bounds_pair = (lo, hi)
    if groups and len(groups) != len(sensitive):
        _fail(
            f"--groups was given {len(groups)} time(s) for {len(sensitive)} --sensitive column(s).",
            "give one --groups A,B,... per --sensitive column, in the same order.",
        )
    control = list(control or [])
    if control_groups and len(control_groups) != len(control):
        _fail(
            f"--control-groups was given {len(control_groups)} time(s) for {len(control)} --control column(s).",
            "give one --control-groups A,B,... per --control column, in the same order.",
        )
    if control and not control_groups and epsilon != float("inf"):
        _fail(
            f"--control-groups is required with --control and a finite --epsilon (declare the levels of {', '.join(control)}).",
            "add --control-groups A,B,... per --control column: the levels are public knowledge, never read off the data.",
        )
    if set(control) & set(sensitive) or len(set(control)) != len(control):
        _fail("a column is given twice among --sensitive and --control.", "name each column once.")
    if not groups and epsilon != float("inf"):
        _fail(
            f"--groups is required with a finite --epsilon (declare the labels of {', '.join(sensitive)}).",
            "add --groups A,B,... per --sensitive column: the set of groups is public knowledge, never read off the data.",
        )
    if undeclared not in ("raise", "other"):
        _fail(f"--undeclared must be raise or other, got {undeclared!r}.", "e.g. --undeclared other.")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file, not a folder.", "pass a folder (it is created when missing).")
    if predictions.is_dir() or not predictions.exists():
        _fail(f"{predictions} is not a CSV or Parquet file.", "pass the path of a CSV file with a header row, or a Parquet file.")
    return metrics, bounds_pair, control


def _writable_ledger(ledger: Path | None) -> Path:
    """The record's path, refused unless it is writable (before anything is released)."""
    ledger_path = _assess_ledger_path(ledger)
    try:  # the record must be writable before anything is released
        ledger_path.parent.mkdir(parents=True, exist_ok=True)
        with ledger_path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        _fail(f"cannot write the record of spending --ledger {ledger_path} ({exc.strerror or exc}).",
              f"pass --ledger FILE in a writable folder (or set ${LEDGER_ENV}).")
    return ledger_path


def _read_header(con: Any, predictions: Path, y_true: str, y_pred: str, sensitive: list[str],
                 control: list[str]) -> frozenset[str]:
    """Refuse an unreadable file or a missing column; return the columns with a number type (Parquet's)."""
    import duckdb

    source = _assess_source(predictions, sensitive + control)
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    except duckdb.Error as exc:  # its text may quote a line of the file: only the kind of error is shown
        kind = "Parquet" if predictions.suffix.lower() in (".parquet", ".pq") else "CSV"
        _fail(f"cannot read {predictions} as {kind} (DuckDB: {type(exc).__name__}).",
              "pass a comma-separated file with a header row, or a Parquet file.")
    header = [row[0] for row in described]
    numeric = frozenset(row[0] for row in described  # Parquet's number columns (a CSV's labels are read as text)
                        if predictions.suffix.lower() in (".parquet", ".pq")
                        and str(row[1]).upper().split("(")[0] in _NUMBER_TYPES)
    for option, column in [("--y-true", y_true), ("--y-pred", y_pred)] + [("--sensitive", c) for c in sensitive] + [
        ("--control", c) for c in control
    ]:
        if column not in header:
            _fail(f"{option} column {column!r} is not in {predictions}.",
                  f"choose one of its columns: {', '.join(map(str, header))}.")
    return numeric


def _declared_groups(groups: list[str] | None, control_groups: list[str] | None, sensitive: list[str],
                     control: list[str]) -> Any:
    """The declared labels as ``PrivateMetricFrame`` takes them (a list, or a dict by column), or None."""
    declared = None
    if groups:
        per_column = [[label.strip() for label in g.split(",") if label.strip()] for g in groups]
        declared = per_column[0] if len(sensitive) == 1 and not control else dict(zip(sensitive, per_column, strict=True))
        if control and control_groups:
            levels = [[label.strip() for label in g.split(",") if label.strip()] for g in control_groups]
            declared.update(zip(control, levels, strict=True))
    return declared


def _release_table(
    con: Any, source: str, predictions: Path, y_true: str, y_pred: str, sensitive: list[str], control: list[str],
    epsilon: float, declared: Any, confidence: float, seed: int | None, undeclared: str, metrics: list[str],
    bounds_pair: tuple[float, float] | None, pos_label: str | None, numeric: frozenset[str], progress: Any,
) -> tuple[Any, list[Any]]:
    """Count in DuckDB, check the table and release it; return the frame and the warnings caught (closes ``con``)."""
    import warnings

    import duckdb

    from dpfair.metrics import REAL_METRICS, PrivateMetricFrame
    from dpfair.privacy import PrivacyLeakWarning

    common = dict(epsilon=epsilon, groups=declared, confidence_level=confidence, noise_random_state=seed,
                  random_state=seed, undeclared=undeclared, metrics={m: m for m in metrics})
    progress(f"counting in DuckDB, releasing the noisy table and computing {len(metrics)} metric(s) at epsilon={epsilon:g}")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyLeakWarning)
            # every metric streams: DuckDB computes the counts, the per-cell sums and the checks in one pass
            reals = [m for m in metrics if m in REAL_METRICS or m == "r2_score"]
            if reals and bounds_pair is None:
                _fail(f"--bounds is required for the real-valued metric(s) {', '.join(reals)}.",
                      "declare the public range of both columns, e.g. --bounds 0,1 (never read off the data).")
            counts = _assess_counts(con, source, y_true, y_pred, sensitive + control,
                                    count_metrics=len(reals) < len(metrics), real_metrics=reals, bounds=bounds_pair,
                                    pos_label=pos_label, numeric=numeric)
            _check_counts(counts, y_true, y_pred, bounds_pair)
            frame = PrivateMetricFrame.from_counts(
                counts, sensitive_features=list(sensitive), y_true="__y_true", y_pred="__y_pred", count="__count",
                control_features=control or None, sums=_sum_columns(reals) or None,
                bounds=bounds_pair if reals else None, **common)
    except (TypeError, ValueError) as exc:
        text = str(exc).replace("'__y_true'", repr(y_true)).replace("'__y_pred'", repr(y_pred))
        text = text.replace("__y_true", "y_true").replace("__y_pred", "y_pred").replace("count: column '__count'", "count")
        _fail(_assess_words(text, y_true, y_pred), "run `dpfair assess --help`.")
    except duckdb.Error as exc:  # its text may quote a value of the file: only the kind of error is shown
        _fail(f"cannot read {predictions} (DuckDB: {type(exc).__name__}).",
              "check that the file is a well-formed CSV or Parquet file (one header row, the same columns on every line).")
    finally:
        con.close()
    return frame, caught


def _write_outputs(frame: Any, caught: list[Any], epsilon: float, seed: int | None, ledger_path: Path,
                   predictions: Path, columns: dict[str, Any], out: Path, scope: str, progress: Any) -> None:
    """Warn about exact or seeded numbers, record what was spent, write the table and the page, say where."""
    from dpfair.metrics import record_spending, write_assessment
    from dpfair.privacy import PrivacyLeakWarning

    if any(issubclass(w.category, PrivacyLeakWarning) for w in caught) and epsilon == float("inf"):
        typer.secho("warning: --epsilon inf: exact metrics, no privacy guarantee.", fg=typer.colors.YELLOW, err=True)
    if frame.privacy_spent_.get("noise") == "seeded" or (seed is not None and epsilon != float("inf")):
        typer.secho("warning: --seed: seeded noise: reproducible, not hardened — not for real people's data.",
                    fg=typer.colors.YELLOW, err=True)
    history = record_spending(ledger_path, frame, predictions, columns, out)
    progress(f"writing the table and the page into {out}")
    try:
        csv_path, html_path = write_assessment(frame, out, source=scope, columns=columns, history=history)
    except OSError as exc:
        _fail(f"cannot write into --out {out} ({exc.strerror or exc}).", "pass a writable folder.")
    typer.echo(f"table: {csv_path}")
    typer.echo(f"assessment: {html_path}")
    typer.echo(f"spent: {history['words']} (record: {ledger_path})")
