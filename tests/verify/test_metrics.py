"""Every metric on files made with openpyxl / python-docx / python-pptx: one passing and one failing case each."""

from __future__ import annotations

from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.shared import Pt

from verify.metrics import (
    METRICS,
    check_csv,
    check_docx_paragraph,
    check_file_exists,
    check_file_permissions,
    check_include_exclude,
    check_line_count,
    check_pptx_text,
    compare_docx_files,
    compare_pptx_files,
    compare_table,
    compare_text_file,
    exact_match,
    match_in_list,
)


def _xlsx(path: Path, rows, bold_first_row=False, formats=None) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    for row in rows:
        ws.append(row)
    if bold_first_row:
        for cell in ws[1]:
            cell.font = openpyxl.styles.Font(bold=True)
    for coord, fmt in (formats or {}).items():
        ws[coord].number_format = fmt
    wb.save(path)
    return path


def _docx(path: Path, paragraphs, *, bold=(), italic=(), underline=(), size=None, center=()) -> Path:
    document = docx.Document()
    for i, text in enumerate(paragraphs):
        p = document.add_paragraph()
        run = p.add_run(text)
        run.bold = i in bold or None
        run.italic = i in italic or None
        run.underline = i in underline or None
        if size:
            run.font.size = Pt(size)
        if i in center:
            p.alignment = WD_ALIGN_PARAGRAPH.CENTER
    document.save(path)
    return path


def _pptx(path: Path, title: str, body: str, bold_title=False) -> Path:
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[0])
    slide.shapes.title.text = title
    if bold_title:
        for p in slide.shapes.title.text_frame.paragraphs:
            for r in p.runs:
                r.font.bold = True
    slide.placeholders[1].text_frame.text = body
    presentation.save(path)
    return path


def test_registry_names_every_metric():
    assert set(METRICS) >= {
        "exact_match", "check_include_exclude", "match_in_list", "compare_table", "compare_docx_files",
        "check_docx_paragraph", "compare_pptx_files", "check_pptx_text", "check_file_exists",
        "check_file_permissions", "compare_text_file", "check_csv", "check_line_count",
    }  # fmt: skip


def test_string_metrics():
    assert exact_match("37\n", {"expected": "37"}, strip=True) == 1.0
    assert exact_match("37\n", {"expected": "37"}) == 0.0
    assert exact_match(None, {"expected": "37"}) == 0.0
    assert check_include_exclude("a b c", {"include": ["a", "c"], "exclude": ["z"]}) == 1.0
    assert check_include_exclude("a b z", {"include": ["a"], "exclude": ["z"]}) == 0.0
    assert check_include_exclude("a", {"include": ["a", "q"]}) == 0.0
    assert match_in_list("v2\n", {"expected": ["v1", "v2"]}) == 1.0
    assert match_in_list("v3", {"expected": ["v1", "v2"]}) == 0.0


def test_file_exists_and_permissions(tmp_path):
    f = tmp_path / "x.sh"
    f.write_text("echo")
    f.chmod(0o644)
    assert check_file_exists(f) == 1.0
    assert check_file_exists(None) == 0.0
    assert check_file_exists(None, should_exist=False) == 1.0
    assert check_file_permissions(f, {"mode": "644"}) == 1.0
    assert check_file_permissions(f, {"mode": "755"}) == 0.0
    assert check_file_permissions(f, {"set": "100"}) == 0.0
    f.chmod(0o744)
    assert check_file_permissions(f, {"set": "100", "unset": "077"}) == 0.0
    f.chmod(0o700)
    assert check_file_permissions(f, {"set": "100", "unset": "077"}) == 1.0
    assert check_file_permissions(None, {"mode": "700"}) == 0.0


def test_text_files_and_lines(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_text("x\ny\n")
    b.write_text("x\n\n  y \n")
    c.write_text("x\nz\n")
    assert compare_text_file(a, b) == 0.0
    assert compare_text_file(a, b, ignore_blanks=True) == 1.0
    assert compare_text_file(a, c, ignore_blanks=True) == 0.0
    assert compare_text_file(None, a) == 0.0
    assert check_line_count(b, {"count": 2}) == 1.0
    assert check_line_count(c, {"count": 3}) == 0.0


def test_check_csv(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("name,city\nana,Paris\nluc,Paris\n")
    assert check_csv(f, {"expect": [{"name": "ana", "city": "Paris"}], "unexpect": [{"city": "Rome"}]}) == 1.0
    assert check_csv(f, {"expect": [{"name": "bo", "city": "Rome"}]}) == 0.0
    assert check_csv(f, {"expect": [], "unexpect": [{"city": "Paris"}]}) == 0.0


def test_compare_table_whole_workbook(tmp_path):
    want = _xlsx(tmp_path / "want.xlsx", [["Item", "Qty"], ["Apples", 12]])
    same = _xlsx(tmp_path / "same.xlsx", [["Item", "Qty"], ["Apples", 12.0], [None, None]])
    other = _xlsx(tmp_path / "other.xlsx", [["Item", "Qty"], ["Apples", 13]])
    assert compare_table(same, want) == 1.0
    assert compare_table(other, want) == 0.0
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"not a zip")
    assert compare_table(broken, want) == 0.0
    assert compare_table(None, want) == 0.0


def test_compare_table_against_csv_and_sheet_refs(tmp_path):
    csv_file = tmp_path / "s.csv"
    csv_file.write_text("name,score\nana,90\n")
    book = _xlsx(tmp_path / "s.xlsx", [["name", "score"], ["ana", 90]])
    wrong = _xlsx(tmp_path / "w.xlsx", [["name", "score"], ["ana", 9]])
    rules = [{"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}]
    assert compare_table(book, csv_file, rules=rules) == 1.0
    assert compare_table(wrong, csv_file, rules=rules) == 0.0
    assert compare_table(
        book, book, rules=[{"type": "sheet_data", "sheet_idx0": "RNSheet", "sheet_idx1": "ENSheet"}]
    )


def test_compare_table_check_cell_rules(tmp_path):
    plain = _xlsx(tmp_path / "p.xlsx", [["H", "R"], ["a", 0.25]])
    styled = _xlsx(tmp_path / "s.xlsx", [["H", "R"], ["a", 0.25]], bold_first_row=True, formats={"B2": "0%"})
    bold = [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1", "props": {"font_bold": True}}]
    pct = [
        {
            "type": "check_cell",
            "coordinate": "B2",
            "props": {"number_format": {"method": "contains", "ref": "%"}},
        }
    ]
    value = [
        {"type": "check_cell", "coordinate": "B2", "props": {"value": {"method": "approx", "ref": 0.2500001}}}
    ]
    assert compare_table(styled, rules=bold) == 1.0
    assert compare_table(plain, rules=bold) == 0.0
    assert compare_table(styled, rules=pct) == 1.0
    assert compare_table(plain, rules=pct) == 0.0
    assert compare_table(plain, rules=value) == 1.0
    missing_sheet = [{"type": "check_cell", "sheet_idx": 3, "coordinate": "A1", "props": {"value": "H"}}]
    assert compare_table(plain, rules=missing_sheet) == 0.0
    with pytest.raises(ValueError):
        compare_table(plain, rules=[{"type": "pivot_table"}])


def test_compare_table_style_rule(tmp_path):
    want = _xlsx(tmp_path / "w.xlsx", [["H"], ["a"]], bold_first_row=True)
    plain = _xlsx(tmp_path / "p.xlsx", [["H"], ["a"]])
    rules = [{"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["font_bold"]}]
    assert compare_table(want, want, rules=rules) == 1.0
    assert compare_table(plain, want, rules=rules) == 0.0


def test_compare_docx_files(tmp_path):
    a = _docx(tmp_path / "a.docx", ["Dear Sam,", "Thanks.", "Best regards, Alex"])
    b = _docx(tmp_path / "b.docx", ["Dear Sam,", "", "Thanks.", "Best regards,  Alex"])
    c = _docx(tmp_path / "c.docx", ["Dear Sam,", "Thanks."])
    assert compare_docx_files(a, b) == 1.0
    assert compare_docx_files(a, c) == 0.0
    assert compare_docx_files(a, b, ignore_blanks=False) == 0.0


def test_check_docx_paragraph(tmp_path):
    styled = _docx(
        tmp_path / "s.docx",
        ["Title", "Quote", "Deadline: June"],
        bold=[0],
        italic=[1],
        underline=[2],
        center=[0],
    )
    plain = _docx(tmp_path / "p.docx", ["Title", "Quote", "Deadline: June"])
    sized = _docx(tmp_path / "z.docx", ["Big"], size=16)
    for rules in (
        {"paragraph": 0, "bold": True, "text": "Title"},
        {"paragraph": 1, "italic": True},
        {"contains": "Deadline", "underline": True},
        {"paragraph": 0, "alignment": "center"},
    ):
        assert check_docx_paragraph(styled, rules) == 1.0, rules
        assert check_docx_paragraph(plain, rules) == 0.0, rules
    assert check_docx_paragraph(plain, {"paragraph": 1, "bold": False}) == 1.0
    assert check_docx_paragraph(plain, {"paragraph": -1, "text": "Deadline: June"}) == 1.0
    assert check_docx_paragraph(plain, {"paragraph": 9, "text": "x"}) == 0.0
    assert check_docx_paragraph(sized, {"paragraph": 0, "size": 16}) == 1.0
    assert check_docx_paragraph(sized, {"paragraph": 0, "size": 12}) == 0.0


def test_docx_bold_inherited_from_the_paragraph_style(tmp_path):
    document = docx.Document()
    document.styles["Heading 1"].font.bold = True
    document.add_paragraph("Heading", style="Heading 1")
    document.save(tmp_path / "h.docx")
    assert check_docx_paragraph(tmp_path / "h.docx", {"paragraph": 0, "bold": True}) == 1.0


def test_pptx_metrics(tmp_path):
    a = _pptx(tmp_path / "a.pptx", "Quarterly Review", "by Alex", bold_title=True)
    b = _pptx(tmp_path / "b.pptx", "Quarterly Review", "by Alex")
    c = _pptx(tmp_path / "c.pptx", "Draft", "by Sam")
    assert compare_pptx_files(a, b) == 1.0
    assert compare_pptx_files(a, c) == 0.0
    assert check_pptx_text(b, {"slide": 0, "equals": "Quarterly Review", "absent": "Draft"}) == 1.0
    assert check_pptx_text(c, {"slide": 0, "equals": "Quarterly Review"}) == 0.0
    assert check_pptx_text(c, {"slide": 0, "contains": "Sam", "absent": "Draft"}) == 0.0
    assert check_pptx_text(a, {"slide": 0, "equals": "Quarterly Review", "bold": True}) == 1.0
    assert check_pptx_text(b, {"slide": 0, "equals": "Quarterly Review", "bold": True}) == 0.0
    assert check_pptx_text(b, {"slide": 4, "contains": "x"}) == 0.0
    not_pptx = tmp_path / "n.pptx"
    not_pptx.write_text("nope")
    assert check_pptx_text(not_pptx, {"contains": "x"}) == 0.0
