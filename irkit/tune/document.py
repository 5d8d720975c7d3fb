"""Writing a tuned schedule back into the document it came from.

Only the schedule blocks change: every other line (docs, comments, layout,
hardware, assumptions) is kept as it was.  The old blocks and the comment
lines directly above them are removed; the new blocks go where the first
old one was (or before the design's closing brace), each with a one-line
comment saying how it was found.
"""

from __future__ import annotations

from irkit.validate.suite import replace_schedules, schedule_blocks


def tuned_text(text: str, schedules: dict[str, list[str]], notes: dict[str, str]) -> str:
    """`text` with its schedule blocks replaced by `schedules`, each block under its `notes` line."""
    if not schedules:
        return replace_schedules(text, {}, notes.get("", ""))
    marker = "\x00irkit-tune-blocks\x00"
    body = replace_schedules(text, {"__marker__": []})
    blocks = []
    for stage, dirs in schedules.items():
        note = notes.get(stage, "")
        head = f"  # {note}\n" if note else ""
        blocks.append(head + f"  schedule {stage} {{\n" + "".join(f"    {d}\n" for d in dirs) + "  }\n")
    placeholder = "  schedule __marker__ {\n  }\n"
    assert placeholder in body, "replace_schedules writes blocks as format_schedules does"
    return body.replace(placeholder, marker, 1).replace(marker, "\n".join(blocks), 1)


def annotated_text(text: str, notes: dict[str, str]) -> str:
    """`text` unchanged but for a note line above each schedule block (the document's own schedule won)."""
    out, pos = [], 0
    for block in schedule_blocks(text):
        line = block.start  # the comment lines above the block start here: the note goes below them
        while text[line:].lstrip(" \t").startswith("#"):
            line = text.find("\n", line) + 1
        start = text.find("schedule", line)
        indent = text[line:start]
        out.append(text[pos:line])
        if notes.get(block.stage):
            out.append(f"{indent}# {notes[block.stage]}\n")
        pos = line
    out.append(text[pos:])
    return "".join(out)
