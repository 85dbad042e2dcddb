"""Generate the bundled task files in data/tasks/files/ (initial documents and expected results).

Office files are built with openpyxl / python-docx / python-pptx so their content is known exactly; text
fixtures are written verbatim. Run after changing a task that uploads or compares one of these files:

    python data/tasks/make_files.py
"""

from __future__ import annotations

from pathlib import Path

import docx
import openpyxl
import pptx

FILES = Path(__file__).resolve().parent / "files"


def xlsx(path: str, rows: list[list], sheet: str = "Sheet1") -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = sheet
    for row in rows:
        ws.append(row)
    out = FILES / path
    out.parent.mkdir(parents=True, exist_ok=True)
    wb.save(out)


def docx_file(path: str, paragraphs: list[str]) -> None:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = FILES / path
    out.parent.mkdir(parents=True, exist_ok=True)
    document.save(out)


def pptx_file(path: str, slides: list[tuple[str, list[str]]]) -> None:
    """Each slide: (title, body lines). Body lines go into the second placeholder (subtitle or content)."""
    presentation = pptx.Presentation()
    for title, body in slides:
        layout = presentation.slide_layouts[0] if len(body) <= 1 else presentation.slide_layouts[1]
        slide = presentation.slides.add_slide(layout)
        slide.shapes.title.text = title
        if body:
            frame = slide.placeholders[1].text_frame
            frame.text = body[0]
            for line in body[1:]:
                frame.add_paragraph().text = line
    out = FILES / path
    out.parent.mkdir(parents=True, exist_ok=True)
    presentation.save(out)


def text(path: str, content: str) -> None:
    out = FILES / path
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(content, encoding="utf-8")


APP_LOG = [
    "2024-05-01 10:00:01 INFO server started",
    "2024-05-01 10:00:07 ERROR database timeout",
    "2024-05-01 10:01:13 INFO request /home 200",
    "2024-05-01 10:02:44 WARN slow response 1200ms",
    "2024-05-01 10:03:02 ERROR cache miss storm",
    "2024-05-01 10:04:10 INFO request /about 200",
    "2024-05-01 10:05:55 ERROR upstream refused connection",
    "2024-05-01 10:06:30 INFO shutdown requested",
]
NAMES = ["maria", "li", "omar", "li", "zoe", "anna", "omar", "maria", "ben"]


def main() -> None:
    # os
    text("os/report.txt", "Weekly report\n\nAll systems nominal.\nNext review: Friday.\n")
    text("os/todo.txt", "buy milk\n")
    # terminal
    text("terminal/app.log", "\n".join(APP_LOG) + "\n")
    text("terminal/errors_expected.txt", "\n".join(line for line in APP_LOG if "ERROR" in line) + "\n")
    text("terminal/names.txt", "\n".join(NAMES) + "\n")
    text("terminal/unique_expected.txt", "\n".join(sorted(set(NAMES))) + "\n")
    text(
        "terminal/pyfiles_expected.txt", "./main.py\n./pkg/__init__.py\n./pkg/util.py\n./tests/test_util.py\n"
    )
    text("terminal/head_expected.txt", "".join(f"line {i}\n" for i in range(1, 6)))
    text("terminal/settings_expected.ini", "[server]\nhost = 0.0.0.0\nport = 8080\n")
    # calc
    xlsx("calc/inventory.xlsx", [["Item", "Qty"], ["Apples", 12], ["Pears", 7], ["Plums", 5]])
    xlsx(
        "calc/sales.xlsx",
        [["Region", "Q1", "Q2"], ["North", 120, 135], ["South", 98, 110], ["West", 143, 150]],
    )
    staff = [["Name", "Team"], ["Ada", "Core"], ["Ada", "Core"], ["Grace", "Infra"], ["Linus", "Kernel"]]
    xlsx("calc/staff.xlsx", staff)
    xlsx("calc/staff_expected.xlsx", [staff[0], staff[1], staff[3], staff[4]])
    xlsx(
        "calc/prices.xlsx",
        [["Item", "Price", "Qty"], ["Pen", 1.5, 10], ["Pad", 3, 4], ["Ink", 7.25, 2], ["Tape", 2, 6]],
    )
    xlsx(
        "calc/budget_notes.xlsx",
        [
            ["Line", "Amount"],
            ["Rent", 1200],
            ["Power", 90],
            ["Net", 60],
            [],
            [],
            ["Note: figures are monthly"],
        ],
    )
    xlsx("calc/rates.xlsx", [["Plan", "Rate"], ["Basic", 0.25], ["Plus", 0.5], ["Pro", 0.125]])
    text("calc/scores.csv", "name,score\nana,90\nbob,72\ncy,85\n")
    fruit = [["Fruit", "Count"], ["Apples", 4], ["Bananas", 6], ["Cherries", 30], ["Dates", 12]]
    xlsx("calc/fruit.xlsx", fruit)
    xlsx("calc/fruit_expected.xlsx", [*fruit, ["Kiwis", 9]])
    # writer
    docx_file("writer/memo.docx", ["Quarterly Memo", "The team met on Monday.", "Next steps follow below."])
    docx_file(
        "writer/quote.docx", ["Favourite quote", "Simplicity is prerequisite for reliability.", "- Dijkstra"]
    )
    docx_file("writer/report.docx", ["Annual Report", "Revenue grew in every region this year."])
    letter = ["Dear Sam,", "Thank you for the quick turnaround on the contract."]
    docx_file("writer/letter.docx", letter)
    docx_file("writer/letter_expected.docx", [*letter, "Best regards, Alex"])
    docx_file("writer/plan.docx", ["Project plan", "Phase one covers research.", "Deadline: June 30"])
    docx_file("writer/notes.docx", ["Teh meeting starts at noon.", "Bring the slides."])
    docx_file("writer/status.docx", ["Status update", "Service is running."])
    # impress
    pptx_file("impress/title.pptx", [("Draft", ["Prepared by the team"])])
    pptx_file("impress/roadmap.pptx", [("Roadmap 2025", ["Three releases planned"])])
    pptx_file("impress/steps.pptx", [("Steps", ["Plan", "Build"])])
    pptx_file("impress/talk.pptx", [("Release Notes", ["Presented by Sam"])])
    pptx_file("impress/launch.pptx", [("Untitled", ["Internal kickoff"])])
    # multi-app
    xlsx("multi/scores.xlsx", [["name", "score"], ["ana", 90], ["bob", 72], ["cy", 85]])
    xlsx("multi/budget.xlsx", [["Item", "Amount"], ["Consulting", None], ["Travel", 300]])


if __name__ == "__main__":
    main()
