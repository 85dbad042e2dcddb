"""Task metrics: pure comparisons from a getter's value (and an expected value) to a score in [0, 1].

Calling convention (OSWorld's): `metric(result, expected, **options)` when the evaluator has an `expected`
getter, else `metric(result, **options)`. `result` is what the result getter returned: a host `Path` for
`vm_file` (None when the file is missing), a string for `vm_command_line`, and so on. A missing or unreadable
result file scores 0.0: an agent that corrupted or never saved the file failed the task.

Names and option names follow OSWorld where OSWorld has the metric (`exact_match`, `check_include_exclude`,
`match_in_list`, `compare_table` with a subset of its `rules`, `compare_text_file`, `compare_docx_files`,
`compare_pptx_files`, `check_csv`); the rest (`check_file_exists`, `check_file_permissions`,
`check_line_count`, `check_docx_paragraph`, `check_pptx_text`) are switchyard's own, documented below.
`METRICS` is the registry task specs are validated against at load time.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import re
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

Metric = Callable[..., float]

# Errors that mean "the file is not a readable document of that kind": a task failure, not a crash.
_UNREADABLE = (OSError, zipfile.BadZipFile, KeyError, ValueError, UnicodeDecodeError)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Path):
        try:
            return value.read_text(encoding="utf-8")
        except _UNREADABLE:
            return None
    return str(value)


# ---------------------------------------------------------------- strings (vm_command_line results)


def exact_match(result: Any, rules: dict[str, Any], strip: bool = False) -> float:
    """1.0 iff the result equals `rules["expected"]` (after stripping surrounding whitespace if `strip`)."""
    text = _text(result)
    if text is None:
        return 0.0
    expected = str(rules["expected"])
    if strip:
        text, expected = text.strip(), expected.strip()
    return float(text == expected)


def check_include_exclude(result: Any, rules: dict[str, list[str]]) -> float:
    """1.0 iff every `rules["include"]` string occurs in the result and no `rules["exclude"]` string does."""
    text = _text(result)
    if text is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    return float(all(s in text for s in include) and not any(s in text for s in exclude))


def match_in_list(result: Any, rules: dict[str, Any], strip: bool = True) -> float:
    """1.0 iff the result is one of `rules["expected"]` (a list)."""
    text = _text(result)
    if text is None:
        return 0.0
    options = [str(x) for x in rules["expected"]]
    if strip:
        text, options = text.strip(), [x.strip() for x in options]
    return float(text in options)


# ---------------------------------------------------------------- files


def check_file_exists(result: Path | None, should_exist: bool = True) -> float:
    """1.0 iff the file fetched by `vm_file` exists (or, with `should_exist=False`, does not)."""
    exists = result is not None and Path(result).exists()
    return float(exists == should_exist)


def _mode(value: str | int) -> int:
    return int(value, 8) if isinstance(value, str) else int(value)


def check_file_permissions(result: Path | None, rules: dict[str, Any]) -> float:
    """1.0 iff the file's permission bits match.

    `rules["mode"]` ("755", "0600" or an int) must equal the file's mode bits exactly; alternatively
    `rules["set"]` bits must all be set and `rules["unset"]` bits all clear (e.g. {"set": "100"} = owner-executable).
    """
    if result is None or not Path(result).exists():
        return 0.0
    bits = stat.S_IMODE(os.stat(result).st_mode)
    if "mode" in rules and bits != _mode(rules["mode"]):
        return 0.0
    if "set" in rules and bits & _mode(rules["set"]) != _mode(rules["set"]):
        return 0.0
    if "unset" in rules and bits & _mode(rules["unset"]):
        return 0.0
    return 1.0


def _lines(text: str, ignore_blanks: bool, ignore_case: bool) -> list[str]:
    lines = text.splitlines()
    if ignore_blanks:
        lines = [re.sub(r"\s+", " ", line).strip() for line in lines]
        lines = [line for line in lines if line]
    if ignore_case:
        lines = [line.lower() for line in lines]
    return lines


def compare_text_file(
    result: Path | None, expected: Path | None, ignore_blanks: bool = False, ignore_case: bool = False
) -> float:
    """1.0 iff both text files have the same lines (`ignore_blanks` collapses whitespace and drops empty lines)."""
    got, want = _text(result), _text(expected)
    if got is None or want is None:
        return 0.0
    return float(_lines(got, ignore_blanks, ignore_case) == _lines(want, ignore_blanks, ignore_case))


def check_line_count(result: Any, rules: dict[str, int]) -> float:
    """1.0 iff the text (a file from `vm_file` or command output) has `rules["count"]` non-empty lines."""
    text = _text(result)
    if text is None:
        return 0.0
    return float(len([line for line in text.splitlines() if line.strip()]) == int(rules["count"]))


def _read_csv(path: Path) -> list[dict[str, str]] | None:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except _UNREADABLE:
        return None


def check_csv(result: Path | None, rules: dict[str, list[dict[str, str]]]) -> float:
    """1.0 iff each `rules["expect"]` record matches some row (all its columns equal) and no `unexpect` one does."""
    if result is None:
        return 0.0
    rows = _read_csv(Path(result))
    if rows is None:
        return 0.0

    def matches(record: dict[str, str]) -> bool:
        return any(all(str(row.get(k, "")).strip() == str(v) for k, v in record.items()) for row in rows)

    ok = all(matches(r) for r in rules.get("expect", [])) and not any(
        matches(r) for r in rules.get("unexpect", [])
    )
    return float(ok)


# ---------------------------------------------------------------- spreadsheets


def _norm_cell(value: Any) -> Any:
    """Cell values compare as numbers when they are numbers (1 == 1.0 == '1'), else as stripped text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return round(float(value), 6)
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return round(number, 6) if math.isfinite(number) else text


def _trim(rows: list[list[Any]]) -> list[list[Any]]:
    rows = [list(r) for r in rows]
    while rows and all(v == "" for v in rows[-1]):
        rows.pop()
    width = max((len(r) for r in rows), default=0)
    rows = [r + [""] * (width - len(r)) for r in rows]
    while width and all(r[width - 1] == "" for r in rows):
        width -= 1
        rows = [r[:width] for r in rows]
    return rows


class _Book:
    """Values (cached results of formulas) and, for xlsx, the openpyxl workbook for style checks."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.workbook = None
        if self.path.suffix.lower() == ".csv":
            with open(self.path, newline="", encoding="utf-8") as f:
                self.names = [self.path.stem]
                self.values = [_trim([[_norm_cell(v) for v in row] for row in csv.reader(f)])]
            return
        import openpyxl

        self.workbook = openpyxl.load_workbook(self.path, data_only=True)
        self.names = list(self.workbook.sheetnames)
        self.values = [
            _trim([[_norm_cell(v) for v in row] for row in ws.iter_rows(values_only=True)])
            for ws in self.workbook.worksheets
        ]

    def index(self, ref: int | str) -> int:
        """Sheet index from an int or OSWorld's "RI0"/"RNSheet1"/"EI0"/"ENSheet1" (prefix already chosen)."""
        if isinstance(ref, int):
            return ref
        kind, rest = ref[1], ref[2:]
        return int(rest) if kind == "I" else self.names.index(rest)


def _pick(result: _Book, expected: _Book | None, ref: int | str) -> tuple[_Book, int]:
    if isinstance(ref, str) and ref.startswith("E"):
        if expected is None:
            raise ValueError(f"sheet reference {ref!r} needs an expected file")
        return expected, expected.index(ref)
    return result, result.index(ref)


def _font_props(cell: Any) -> dict[str, Any]:
    font = cell.font
    fill = cell.fill
    return {
        "value": cell.value,
        "font_bold": bool(font.b),
        "font_italic": bool(font.i),
        "font_underline": font.u not in (None, "none"),
        "font_size": float(font.sz) if font.sz is not None else None,
        "font_name": font.name,
        "number_format": cell.number_format,
        "bgcolor": (fill.fgColor.rgb if fill is not None and fill.fill_type == "solid" else None),
    }


def _match_rule(value: Any, rule: Any) -> bool:
    """OSWorld's {"method": ..., "ref": ...} matching; a bare value means equality."""
    if not isinstance(rule, dict):
        return _norm_cell(value) == _norm_cell(rule) if not isinstance(rule, bool) else value == rule
    method, ref = rule.get("method", "eq"), rule.get("ref")
    if method == "eq":
        return _norm_cell(value) == _norm_cell(ref)
    if method == "ne":
        return _norm_cell(value) != _norm_cell(ref)
    if method == "approx":
        try:
            return abs(float(value) - float(ref)) <= float(rule.get("tolerance", 1e-6))
        except (TypeError, ValueError):
            return False
    if method in ("str_contains", "contains"):
        return str(ref) in str(value if value is not None else "")
    if method == "re":
        return re.search(str(ref), str(value if value is not None else "")) is not None
    raise ValueError(f"unknown match method {method!r}")


def _check_rule(result: _Book, expected: _Book | None, rule: dict[str, Any]) -> bool:
    kind = rule["type"]
    if kind == "sheet_name":
        return expected is not None and result.names == expected.names
    if kind == "sheet_data":
        b0, i0 = _pick(result, expected, rule.get("sheet_idx0", 0))
        b1, i1 = _pick(result, expected, rule.get("sheet_idx1", "EI0"))
        return b0.values[i0] == b1.values[i1]
    if kind == "check_cell":
        book, idx = _pick(result, expected, rule.get("sheet_idx", 0))
        if book.workbook is None:
            raise ValueError("check_cell needs an xlsx file")
        cell = book.workbook.worksheets[idx][rule["coordinate"]]
        props = _font_props(cell)
        return all(_match_rule(props[name], want) for name, want in rule["props"].items())
    if kind == "style":
        # Same style properties on every non-empty cell of two sheets (OSWorld's "style" rule, fewer props).
        b0, i0 = _pick(result, expected, rule.get("sheet_idx0", 0))
        b1, i1 = _pick(result, expected, rule.get("sheet_idx1", "EI0"))
        if b0.workbook is None or b1.workbook is None:
            raise ValueError("style needs xlsx files")
        ws0, ws1 = b0.workbook.worksheets[i0], b1.workbook.worksheets[i1]
        names = rule.get("props", ["font_bold", "font_italic"])
        for row in ws1.iter_rows():
            for cell in row:
                if cell.value is None:
                    continue
                got, want = _font_props(ws0[cell.coordinate]), _font_props(cell)
                if any(got[n] != want[n] for n in names):
                    return False
        return True
    raise ValueError(f"unknown compare_table rule type {kind!r}")


def compare_table(
    result: Path | None, expected: Path | None = None, rules: list[dict] | None = None
) -> float:
    """Compare a spreadsheet (xlsx via openpyxl cached values, or csv) with an expected one.

    Without `rules`: same sheet names and same trimmed cell values on every sheet. With `rules` (OSWorld's
    option, subset): `sheet_name`, `sheet_data` (sheet_idx0/1 as int or "RI0"/"RNname"/"EI0"/"ENname"),
    `check_cell` ({sheet_idx, coordinate, props: {value|font_bold|font_italic|font_underline|font_size|
    font_name|number_format|bgcolor: value or {"method": eq|ne|approx|contains|re, "ref": ...}}}) and
    `style` ({sheet_idx0, sheet_idx1, props}). All rules must hold.
    """
    if result is None:
        return 0.0
    try:
        got = _Book(Path(result))
        want = _Book(Path(expected)) if expected is not None else None
    except _UNREADABLE as e:
        log.info("compare_table: unreadable workbook: %s", e)
        return 0.0
    if not rules:
        if want is None:
            raise ValueError("compare_table without rules needs an expected file")
        return float(got.names == want.names and got.values == want.values)
    try:
        return float(all(_check_rule(got, want, rule) for rule in rules))
    except (IndexError, KeyError) as e:  # a sheet or cell the result does not have
        log.info("compare_table: %s", e)
        return 0.0


# ---------------------------------------------------------------- documents


def _open_office(path: Path | None, opener: Any, kind: str) -> Any:
    """The document, or None when there is no file or it cannot be read as `kind` (a failed task, not a crash)."""
    if path is None:
        return None
    try:
        return opener(str(path))
    except _UNREADABLE:
        return None
    except Exception as e:  # python-docx/-pptx raise their own PackageNotFoundError for other files
        log.info("unreadable %s %s: %s", kind, path, e)
        return None


def _docx(path: Path | None) -> Any:
    import docx

    return _open_office(path, docx.Document, "docx")


def compare_docx_files(
    result: Path | None,
    expected: Path | None,
    ignore_blanks: bool = True,
    ignore_case: bool = False,
) -> float:
    """1.0 iff both documents have the same paragraph texts (`ignore_blanks`: whitespace-collapsed, no empties)."""
    got, want = _docx(result), _docx(expected)
    if got is None or want is None:
        return 0.0
    text = "\n".join(p.text for p in got.paragraphs)
    gold = "\n".join(p.text for p in want.paragraphs)
    return float(_lines(text, ignore_blanks, ignore_case) == _lines(gold, ignore_blanks, ignore_case))


def _effective(run: Any, paragraph: Any, attr: str) -> Any:
    """A run's bold/italic/underline/size as displayed: direct formatting, then character, then paragraph style."""
    value = getattr(run.font, attr)
    if value is not None:
        return value
    style = run.style
    while style is not None:
        value = getattr(style.font, attr)
        if value is not None:
            return value
        style = style.base_style
    style = paragraph.style
    while style is not None:
        value = getattr(style.font, attr)
        if value is not None:
            return value
        style = style.base_style
    return None


def _select_paragraphs(paragraphs: list[Any], rules: dict[str, Any]) -> list[Any]:
    body = [p for p in paragraphs if p.text.strip()] if rules.get("skip_empty", True) else list(paragraphs)
    if "paragraph" in rules:
        index = int(rules["paragraph"])
        return [body[index]] if -len(body) <= index < len(body) else []
    if "contains" in rules:
        return [p for p in body if rules["contains"] in p.text]
    return body


def check_docx_paragraph(result: Path | None, rules: dict[str, Any]) -> float:
    """Formatting of selected paragraphs of a docx.

    Select with `paragraph` (index among non-empty paragraphs) or `contains` (text); then every selected
    paragraph must satisfy the given checks: `text` (exact, stripped), `bold` / `italic` / `underline`
    (every run with visible text), `size` (points), `alignment` ("left"|"center"|"right"|"justify").
    No selected paragraph scores 0.0.
    """
    document = _docx(result)
    if document is None:
        return 0.0
    selected = _select_paragraphs(document.paragraphs, rules)
    if not selected:
        return 0.0
    alignments = {"left": {None, 0}, "center": {1}, "right": {2}, "justify": {3}}
    for p in selected:
        if "text" in rules and p.text.strip() != rules["text"]:
            return 0.0
        if "alignment" in rules:
            value = p.alignment if p.alignment is None else int(p.alignment)
            if value not in alignments[rules["alignment"]]:
                return 0.0
        runs = [r for r in p.runs if r.text.strip()]
        if not runs:
            return 0.0
        for attr in ("bold", "italic", "underline"):
            if attr in rules and any(bool(_effective(r, p, attr)) != bool(rules[attr]) for r in runs):
                return 0.0
        if "size" in rules:
            for r in runs:
                size = _effective(r, p, "size")
                if size is None or abs(size.pt - float(rules["size"])) > 0.01:
                    return 0.0
    return 1.0


def _pptx(path: Path | None) -> Any:
    import pptx

    return _open_office(path, pptx.Presentation, "pptx")


def _slide_texts(presentation: Any) -> list[list[str]]:
    slides = []
    for slide in presentation.slides:
        texts = [shape.text_frame.text.strip() for shape in slide.shapes if shape.has_text_frame]
        slides.append(sorted(t for t in texts if t))
    return slides


def compare_pptx_files(result: Path | None, expected: Path | None) -> float:
    """1.0 iff both presentations have the same number of slides and the same non-empty shape texts per slide."""
    got, want = _pptx(result), _pptx(expected)
    if got is None or want is None:
        return 0.0
    return float(_slide_texts(got) == _slide_texts(want))


def check_pptx_text(result: Path | None, rules: dict[str, Any]) -> float:
    """Text on one slide of a pptx.

    `slide` (0-based index) selects the slide; `equals` requires a shape whose whole text (stripped) equals it,
    `contains` a shape containing it, `absent` no shape containing it; `bold: true` additionally requires every
    run with visible text in the matched shape to be bold.
    """
    presentation = _pptx(result)
    if presentation is None:
        return 0.0
    slides = list(presentation.slides)
    index = int(rules.get("slide", 0))
    if not -len(slides) <= index < len(slides):
        return 0.0
    shapes = [s for s in slides[index].shapes if s.has_text_frame]
    if "absent" in rules and any(rules["absent"] in s.text_frame.text for s in shapes):
        return 0.0
    if "equals" in rules:
        shapes = [s for s in shapes if s.text_frame.text.strip() == rules["equals"]]
    elif "contains" in rules:
        shapes = [s for s in shapes if rules["contains"] in s.text_frame.text]
    elif "absent" in rules:
        return 1.0
    if not shapes:
        return 0.0
    if rules.get("bold"):
        for shape in shapes:
            runs = [r for p in shape.text_frame.paragraphs for r in p.runs if r.text.strip()]
            if runs and all(r.font.bold for r in runs):
                return 1.0
        return 0.0
    return 1.0


METRICS: dict[str, Metric] = {
    "exact_match": exact_match,
    "check_include_exclude": check_include_exclude,
    "match_in_list": match_in_list,
    "check_file_exists": check_file_exists,
    "check_file_permissions": check_file_permissions,
    "compare_text_file": compare_text_file,
    "check_line_count": check_line_count,
    "check_csv": check_csv,
    "compare_table": compare_table,
    "compare_docx_files": compare_docx_files,
    "check_docx_paragraph": check_docx_paragraph,
    "compare_pptx_files": compare_pptx_files,
    "check_pptx_text": check_pptx_text,
}
