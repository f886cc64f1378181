"""The CLI's tables print every cell as it is: text in square brackets is data, not rich markup."""

from __future__ import annotations

from ostinato.cli.output import print_table


def test_a_cell_in_square_brackets_is_printed_as_it_is(capsys):
    print_table([{"name": "stale [stale]", "error": "[bold]not bold[/bold] [/]", "args": "['a', 1]"}],
                [("name", "[name]"), ("error", "error"), ("args", "args")], title="runs [today]")
    out = capsys.readouterr().out
    assert "stale [stale]" in out
    assert "[bold]not bold[/bold] [/]" in out
    assert "['a', 1]" in out
    assert "[name]" in out and "runs [today]" in out
