import io

from rich.console import Console

from flows.progress import live, track


def test_track_passes_records_through_outside_the_cli():
    assert list(track(iter(range(5)), "stage")) == [0, 1, 2, 3, 4]


def test_track_counts_results_while_live():
    out = io.StringIO()
    with live(Console(file=out, force_terminal=True, width=80)):
        assert list(track(iter("abc"), "rewrite_cli", total=3)) == ["a", "b", "c"]
        assert list(track(iter("xy"), "ingest-000")) == ["x", "y"]  # unknown total: a running count
    text = out.getvalue()
    assert "3/3" in text and "2/2" in text
