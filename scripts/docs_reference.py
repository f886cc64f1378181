"""MkDocs hooks (``hooks:`` in mkdocs.yml) that write the documentation's references at build time.

- ``docs/reference/cli.md`` holds the marker ``<!-- ostinato:cli -->``; it is replaced by
  every command of ``ostinato.cli:cli``, walked as click sees it: usage, help text, arguments
  and options (with their defaults and environment variables).
- ``docs/reference/configuration.md`` holds ``<!-- ostinato:settings -->``; it is replaced by
  every field of ``ostinato.config.Settings``: type, default, ``OSTINATO_*`` variable, TOML key,
  and the ``#:`` comment above the field in config.py, which is its help.
- The simulator's plots under ``bench/results`` are added to the site under ``results/``, so
  that the pages can show them without a copy in ``docs/``.

Nothing generated is committed: the text comes from the code at each build.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import click
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
CLI_MARKER = "<!-- ostinato:cli -->"
SETTINGS_MARKER = "<!-- ostinato:settings -->"
PLOTS = ROOT / "bench" / "results"


# -- hooks -------------------------------------------------------------------


def on_files(files: Files, config: Any) -> Files:
    for png in sorted(PLOTS.glob("*/*.png")):
        uri = f"results/{png.parent.name}/{png.name}"
        files.append(File.generated(config, uri, abs_src_path=str(png)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if SETTINGS_MARKER in markdown:
        markdown = markdown.replace(SETTINGS_MARKER, settings_reference())
    return markdown


# -- the command line --------------------------------------------------------


def cli_reference() -> str:
    from ostinato.cli import cli

    root = click.Context(cli, info_name="ostinato")
    lines = ["## ostinato", ""]
    lines += _command_body(cli, root)
    for path, command, ctx in _walk(cli, root, ["ostinato"]):
        lines += [f"{'#' * min(len(path) + 1, 6)} {' '.join(path)}", ""]
        lines += _command_body(command, ctx)
    return "\n".join(lines)


def _walk(group: click.Command, ctx: click.Context, path: list[str]):
    if not isinstance(group, click.Group):
        return
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = click.Context(command, info_name=name, parent=ctx)
        yield path + [name], command, sub
        yield from _walk(command, sub, path + [name])


def _command_body(command: click.Command, ctx: click.Context) -> list[str]:
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    lines = ["```text", usage, "```", ""]
    for paragraph in _paragraphs(command.help or command.short_help or ""):
        lines += [_escape(paragraph), ""]
    arguments = [p for p in command.get_params(ctx) if isinstance(p, click.Argument)]
    if arguments:
        lines += ["**Arguments:** " + ", ".join(f"`{p.human_readable_name}`" for p in arguments), ""]
    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option) and not p.hidden
               and (not p.is_eager or "--help" not in p.opts or ctx.parent is None)]
    if options:
        lines += ["**Options:**", ""]
        for option in options:
            record = option.get_help_record(ctx)
            if record is None:
                continue
            names, help_text = record
            extra = f" (environment: `{option.envvar}`)" if isinstance(option.envvar, str) else ""
            text = _escape(" ".join(help_text.split())) if help_text else ""
            lines.append(f"- `{names}`{': ' + text if text else ''}{extra}")
        lines.append("")
    if isinstance(command, click.Group):
        names = [n for n in sorted(command.list_commands(ctx)) if not command.get_command(ctx, n).hidden]
        lines += ["**Commands:** " + ", ".join(f"`{n}`" for n in names), ""]
    return lines


def _paragraphs(text: str) -> list[str]:
    """Help text as paragraphs, click's ``\\b`` (keep as is) markers dropped, lines joined."""
    text = text.replace("\b\n", "")
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


_SPECIAL = re.compile(r"([\\*_\[\]<>#|])")


def _escape(text: str) -> str:
    """Markdown-escape help text, except inside its `code spans`."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") and p.endswith("`") and len(p) > 1 else _SPECIAL.sub(r"\\\1", p)
                   for p in parts)


# -- the settings ------------------------------------------------------------


def settings_reference() -> str:
    from ostinato.config import Settings

    helps, types = _settings_source()
    defaults = {f.name: f for f in dataclasses.fields(Settings)}
    lines = []
    for name, f in defaults.items():
        lines += [f"### `{name}`", ""]
        lines += [_escape(helps.get(name, "")) or "(no help text yet)", ""]
        lines += [f"- type: {_type(types.get(name, '?'))}",
                  f"- default: {_default(f)}",
                  f"- environment: `OSTINATO_{name.upper()}`",
                  f"- TOML: {_toml_key(name, f)}", ""]
    return "\n".join(lines)


def _settings_source() -> tuple[dict[str, str], dict[str, str]]:
    """Each field's help (the ``#:`` lines right above it) and annotation, read from config.py."""
    path = ROOT / "src" / "ostinato" / "config.py"
    source = path.read_text(encoding="utf-8")
    source_lines = source.splitlines()
    tree = ast.parse(source)
    settings = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    helps: dict[str, str] = {}
    types: dict[str, str] = {}
    for node in settings.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        types[name] = ast.unparse(node.annotation)
        comment: list[str] = []
        index = node.lineno - 2
        while index >= 0 and source_lines[index].strip().startswith("#:"):
            comment.insert(0, source_lines[index].strip()[2:].strip())
            index -= 1
        helps[name] = " ".join(comment)
    return helps, types


_TYPES = {
    "str": "text",
    "int": "whole number",
    "float": "number",
    "bool": "true or false",
    "timedelta": "duration (`90s`, `15m`, `12h`, `1d12h` or ISO 8601 `P1DT2H`)",
    "tuple[str, ...]": "list (a TOML array, or comma-separated in the environment)",
    "Mapping[str, Mapping[str, float]]": "table of tables (TOML tables, or a JSON object in the environment)",
}


def _type(annotation: str) -> str:
    return _TYPES.get(annotation, f"`{annotation}`")


def _default(f: dataclasses.Field) -> str:
    if f.name == "node":
        return "this machine's host name"
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = f.default_factory()  # type: ignore[misc]
    else:
        return "none"
    if f.name == "policy_ratios":
        return "the ratio table of the orchestrator (see [Origins and policies](origins.md))"
    if isinstance(value, timedelta):
        from ostinato.domain.durations import format_duration

        return f"`{format_duration(value)}`"
    if isinstance(value, tuple):
        return "`" + ",".join(value) + "`" if value else "none (an empty list)"
    if value == "":
        return "none (empty)"
    return f"`{value}`"


def _toml_key(name: str, f: dataclasses.Field) -> str:
    if name == "policy_ratios":
        return "a table per visit type, `[ostinato.policy_ratios.git]` with `policy = ratio` lines"
    return f"`{name}` in the `[ostinato]` table"
