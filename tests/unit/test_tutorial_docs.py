"""Every command in the tutorial works as written.

Each fenced block with the info string `console` in docs/tutorial/*.md is
run: a line starting with `$ ` is a command, run by bash from the
repository root with this interpreter's `bin` first on PATH; the lines
after it, up to the next command or the end of the block, are its expected
output.  Every non-empty expected line must appear, in order, in the
command's stdout and stderr together (`...` inside a line matches
anything); a last line `[exit N]` is the exit status the command must have
(0 when absent).  So a reader who copies a command sees what the chapter
shows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial"
EXIT = re.compile(r"\[exit (\d+)\]$")


@dataclass
class Command:
    chapter: str
    line: int
    text: str
    expected: list[str] = field(default_factory=list)
    status: int = 0

    @property
    def id(self) -> str:
        return f"{self.chapter}:{self.line}"


def commands(path: Path) -> list[Command]:
    """The console commands of one chapter, with their expected output and exit status."""
    out: list[Command] = []
    in_console = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fence = line.strip()
        if fence.startswith("```"):
            in_console = not in_console and fence == "```console"
            continue
        if not in_console:
            continue
        if line.startswith("$ "):
            out.append(Command(path.name, number, line[2:]))
        elif out and EXIT.match(line.strip()):
            out[-1].status = int(EXIT.match(line.strip()).group(1))  # type: ignore[union-attr]
        elif out and line.strip():
            out[-1].expected.append(line.rstrip())
    return out


def _pattern(expected: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in expected.strip().split("...")]
    return re.compile(".*".join(parts))


def check_output(output: str, expected: list[str]) -> str | None:
    """None when every expected line occurs in order in `output`; else the first one that does not."""
    lines = output.splitlines()
    at = 0
    for want in expected:
        pattern = _pattern(want)
        while at < len(lines) and not pattern.search(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


ALL = [c for chapter in sorted(TUTORIAL.glob("*.md")) for c in commands(chapter)]


def test_the_tutorial_has_commands():
    assert len({c.chapter for c in ALL}) >= 6, "every chapter shows commands to run"


WRITES = re.compile(r">\s*(/tmp/\S+)")


def prerequisites(command: Command) -> list[Command]:
    """The earlier commands of its chapter that write a /tmp file this one uses (a chapter's
    commands run as separate tests, in any order and in parallel, so each runs its own)."""
    chapter = [c for c in ALL if c.chapter == command.chapter and c.line < command.line]
    return [c for c in chapter if any(path in command.text for path in WRITES.findall(c.text))]


@pytest.mark.parametrize("command", ALL, ids=[c.id for c in ALL])
def test_command_works_as_written(command: Command, tmp_path: Path):
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("IRKIT_TRACEBACK", None)
    private = f"{tmp_path}/"  # the chapter's /tmp files, this test's own: parallel tests share none
    for before in prerequisites(command):
        subprocess.run(["bash", "-c", before.text.replace("/tmp/", private)], cwd=ROOT, env=env, capture_output=True,
                       timeout=120, check=True)  # fmt: skip
    proc = subprocess.run(
        ["bash", "-c", command.text.replace("/tmp/", private)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = (proc.stdout + proc.stderr).replace(private, "/tmp/")  # the paths as the chapter shows them
    assert proc.returncode == command.status, (
        f"{command.id}: `{command.text}` exited {proc.returncode}, the chapter says {command.status}\n{output}"
    )
    assert "Traceback" not in output, f"{command.id}: a traceback\n{output}"
    missing = check_output(output, command.expected)
    assert missing is None, f"{command.id}: `{command.text}` did not print\n  {missing}\nit printed:\n{output}"


def test_a_command_reading_a_file_runs_the_command_writing_it_first():
    reader = next(c for c in ALL if c.id == "ch5-raising.md:99")
    assert [c.id for c in prerequisites(reader)] == ["ch5-raising.md:98"]


def test_runner_matches_in_order_with_wildcards():
    out = "a 1.5 ms\nb ok\nc"
    assert check_output(out, ["a ... ms", "c"]) is None
    assert check_output(out, ["c", "a ... ms"]) == "a ... ms"
    assert check_output(out, ["b fail"]) == "b fail"


def test_runner_reads_exit_status_and_skips_other_fences(tmp_path: Path):
    doc = tmp_path / "x.md"
    doc.write_text("```text\n$ not run\n```\n```console\n$ false\n[exit 1]\n$ echo hi\nhi\n```\n")
    found = commands(doc)
    assert [(c.text, c.status, c.expected) for c in found] == [("false", 1, []), ("echo hi", 0, ["hi"])]
