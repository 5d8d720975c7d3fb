"""The comments of a design document, attached to the IR ops they describe.

The grammar ignores comments, so the IR carries none; a tool that writes a
document back (`irkit fmt`, the tuner) would lose them.  This module finds
every comment of the source and attaches it to a *piece* of the document,
keyed by the op that prints that piece, so the printer
(`irkit.backends.design_text.print_design(ir, comments)`) can put it back.

A piece is what the printer puts on a line of its own:

- an item (`doc`, `tensor`, a statement, `hardware NAME`, `metric`), a
  size, layout entry, assumption, schedule directive or hardware field:
  role `item` of its op;
- the header of a block that is an op (`design g {`, `schedule C {`,
  `hardware h {`, `cache L1 {`, `dram {`): role `open`; its `}`: role
  `close`;
- the header and the `}` of a `sizes`, `layout` or `assume` block, which
  are not ops: roles `group_open` of the block's first entry and
  `group_close` of its last one.

Each comment becomes one of:

- the *trailing* comment of the piece that ends on the comment's line, if
  only separators (`;`, `,`, an empty block) stand between them;
- otherwise a *leading* comment (printed on lines of its own just before
  it) of the piece it stands in (`tensor A : f32[M,  # rows` ...) or of
  the next piece;
- with no piece after it, a comment of the file's *tail*.

Comments of empty blocks (`layout { # nothing }`), which print as
nothing, go to their neighbours by the same rules.  Blank lines around
comments are remembered where they separate a comment from what precedes
it, or the last leading comment from its piece, so a detached heading stays
detached.

`tune`-like tools that replace an op keep its comments with
`DocumentComments.move` and `irkit.frontend.document.replace_schedule`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from lark import Tree
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation

from irkit.dialects import design as d

Role = Literal["item", "open", "close", "group_open", "group_close"]
ROLES: tuple[Role, ...] = ("item", "open", "close", "group_open", "group_close")


@dataclass(frozen=True)
class Comment:
    """One `#` comment of the source: its text (from `#`, trailing blanks removed) and where it was."""

    text: str
    line: int
    col: int
    pos: int  # offset of the '#' in the source
    own_line: bool = True  # nothing but blanks before it on its line
    blank_before: bool = False  # an empty line between it and the line of code or comment before it


@dataclass
class Attached:
    """The comments of one piece: lines of their own before it, and one at the end of its line."""

    leading: list[Comment] = field(default_factory=list)
    trailing: Comment | None = None
    gap_after: bool = False  # an empty line between the last leading comment and the piece

    def __bool__(self) -> bool:
        return bool(self.leading) or self.trailing is not None

    def all(self) -> list[Comment]:
        return [*self.leading, *([self.trailing] if self.trailing is not None else [])]


class DocumentComments:
    """Every comment of a document, keyed by (op, role) of the piece it is attached to.

    Ops are keyed by identity: IR built from the same text again is a
    different key.  `tail` holds the comments after the last piece.
    """

    def __init__(self) -> None:
        self._attached: dict[tuple[Operation, Role], Attached] = {}
        self.tail: list[Comment] = []

    def get(self, op: Operation, role: Role = "item") -> Attached | None:
        return self._attached.get((op, role))

    def at(self, op: Operation, role: Role = "item") -> Attached:
        """The comments of (op, role), created empty if there are none yet."""
        return self._attached.setdefault((op, role), Attached())

    def has(self, op: Operation, role: Role = "item") -> bool:
        return bool(self._attached.get((op, role)))

    def pop(self, op: Operation, role: Role) -> Attached | None:
        return self._attached.pop((op, role), None)

    def move(self, old: Operation, new: Operation, roles: tuple[Role, ...] = ROLES) -> None:
        """Give `new` the comments of `old` (for a tool that replaces an op by an equivalent one)."""
        for role in roles:
            attached = self._attached.pop((old, role), None)
            if attached:
                merge_into(self.at(new, role), attached)

    def keys(self) -> list[tuple[Operation, Role]]:
        return [key for key, value in self._attached.items() if value]

    def comments(self) -> list[Comment]:
        """Every comment held, in source order."""
        found = [c for attached in self._attached.values() for c in attached.all()] + self.tail
        return sorted(found, key=lambda c: c.pos)

    def __bool__(self) -> bool:
        return bool(self.tail) or any(self._attached.values())

    def __len__(self) -> int:
        return len(self.comments())


def merge_into(target: Attached, extra: Attached) -> None:
    """Add `extra`'s comments to `target`; a second trailing comment becomes the last leading one."""
    target.leading.extend(extra.leading)
    if extra.trailing is None:
        target.gap_after = target.gap_after or extra.gap_after
        return
    if target.trailing is None:
        target.trailing = extra.trailing
    else:
        target.leading.append(extra.trailing)


# --- finding comments ------------------------------------------------------------


def scan_comments(text: str) -> list[Comment]:
    """Every comment of `text`, in order.

    A comment runs from a `#` outside a string to the end of the line --
    the grammar's COMMENT token; strings never span lines, so one pass over
    each line finds them all (tests check this against the lexer).
    """
    found: list[Comment] = []
    pos = 0
    previous_blank = False  # the line before was empty (or blank)
    seen_code_or_comment = False
    for lineno, line in enumerate(text.split("\n"), start=1):
        hash_at = _comment_start(line)
        stripped = line.strip()
        if hash_at is not None:
            own = not line[:hash_at].strip()
            found.append(
                Comment(
                    text=line[hash_at:].rstrip(),
                    line=lineno,
                    col=hash_at + 1,
                    pos=pos + hash_at,
                    own_line=own,
                    blank_before=own and previous_blank and seen_code_or_comment,
                )
            )
        if stripped:
            seen_code_or_comment = True
        previous_blank = not stripped
        pos += len(line) + 1
    return found


def _comment_start(line: str) -> int | None:
    in_string = False
    i = 0
    while i < len(line):
        ch = line[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "#":
            return i
        i += 1
    return None


# --- pieces of the source ----------------------------------------------------------


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int  # offset just past the piece's last character
    end_line: int
    key: tuple[Operation, Role]


_ONE_LINE_ITEMS = frozenset({"doc", "tensor", "scalar", "index_stmt", "named_stmt", "hardware_ref", "metric"})
_GROUPS = frozenset({"sizes", "layout", "assume"})


class _PieceFinder:
    """Walks the Lark tree of a document (blocks nest at most three deep) and lists its pieces."""

    def __init__(self, text: str, ops: dict[tuple[int, int], Operation]):
        self.text = text
        self.ops = ops
        self.pieces: list[_Piece] = []

    def op(self, node: Tree) -> Operation | None:
        return self.ops.get((node.meta.line, node.meta.column))

    def add(self, start: int, end: int, op: Operation | None, role: Role) -> None:
        if op is None or end <= start:
            return  # no op prints it: its comments go to the neighbours
        end_line = self.text.count("\n", 0, end - 1) + 1
        self.pieces.append(_Piece(start, end, end_line, (op, role)))

    def whole(self, node: Tree, op: Operation | None, role: Role = "item") -> None:
        self.add(node.meta.start_pos, node.meta.end_pos, op, role)

    def block(self, node: Tree, op: Operation | None, entries: list[Tree], entry_op=None) -> None:
        """Header, entries and closing brace of a block; `entry_op` says which op an entry prints as."""
        brace = _open_brace(self.text, node.meta.start_pos)
        close = node.meta.end_pos - 1
        has_close = 0 <= close < len(self.text) and self.text[close] == "}"
        if op is not None:
            self.add(node.meta.start_pos, brace + 1, op, "open")
        for entry in entries:
            (entry_op or self.entry)(entry)
        if op is not None and has_close:
            self.add(close, close + 1, op, "close")

    def entry(self, node: Tree) -> None:
        self.whole(node, self.op(node))

    def group(self, node: Tree) -> None:
        entries = [c for c in node.children if isinstance(c, Tree)]
        ops = [self.op(e) for e in entries]
        if not entries or ops[0] is None or ops[-1] is None:
            for entry in entries:
                self.entry(entry)
            return
        brace = _open_brace(self.text, node.meta.start_pos)
        self.add(node.meta.start_pos, brace + 1, ops[0], "group_open")
        for entry in entries:
            self.entry(entry)
        close = node.meta.end_pos - 1
        if self.text[close : close + 1] == "}":
            self.add(close, close + 1, ops[-1], "group_close")

    def hardware(self, node: Tree) -> None:
        self.block(node, self.op(node), [c for c in node.children if isinstance(c, Tree)], self.hw_item)

    def hw_item(self, node: Tree) -> None:
        if node.data in ("hw_field", "hw_text"):
            self.entry(node)
            return
        self.block(node, self.op(node), [c for c in node.children if isinstance(c, Tree)])

    def design(self, node: Tree) -> None:
        self.block(node, self.op(node), [c for c in node.children if isinstance(c, Tree)], self.item)

    def item(self, node: Tree) -> None:
        kind = node.data
        if kind in _ONE_LINE_ITEMS:
            self.entry(node)
        elif kind in _GROUPS:
            self.group(node)
        elif kind == "schedule":
            self.block(node, self.op(node), [c for c in node.children if isinstance(c, Tree)])
        elif kind == "hardware_block":
            self.hardware(node)


def _open_brace(text: str, start: int) -> int:
    """Offset of the first `{` at or after `start` that is not in a comment (block headers hold no strings)."""
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "{":
            return i
        if ch == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
        i += 1
    return len(text) - 1


def _located_ops(module: ModuleOp) -> dict[tuple[int, int], Operation]:
    """(line, col) -> op, for the ops that print as pieces (not the ops of statement bodies)."""
    found: dict[tuple[int, int], Operation] = {}

    def add(op: Operation) -> None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            found.setdefault((loc.line.data, loc.column.data), op)

    for top in module.body.block.ops:
        add(top)
        for op in _children(top):
            add(op)
            for inner in _children(op):
                add(inner)
                for field_op in _children(inner):
                    add(field_op)
    return found


def _children(op: Operation) -> Iterator[Operation]:
    if isinstance(op, (d.DesignOp, d.ScheduleOp, d.HardwareOp, d.HwLevelOp)):
        yield from op.body.block.ops


# --- attaching ---------------------------------------------------------------------


def attach_comments(text: str, tree: Tree, module: ModuleOp) -> DocumentComments:
    """The comments of `text`, attached to the ops of `module`, which was built from `tree`, the parse of `text`."""
    finder = _PieceFinder(text, _located_ops(module))
    top = tree.children[0] if tree.data == "start" else tree
    if top.data == "design":
        finder.design(top)
    elif top.data == "hardware_file":
        finder.hardware(top.children[0])
    return attach(scan_comments(text), finder.pieces, text)


def attach(comments: list[Comment], pieces: list[_Piece], text: str) -> DocumentComments:
    """Give each comment its piece, by the rules of the module docstring."""
    result = DocumentComments()
    pieces = sorted(pieces, key=lambda p: p.start)
    starts = [p.start for p in pieces]
    pending: list[tuple[Comment, _Piece | None]] = []
    for comment in comments:
        i = bisect.bisect_right(starts, comment.pos)  # pieces[:i] start before the comment
        inside = pieces[i - 1] if i and pieces[i - 1].end > comment.pos else None
        if inside is not None:
            pending.append((comment, inside))
            continue
        before = pieces[i - 1] if i else None
        if before is not None and before.end_line == comment.line:
            result.at(*before.key).trailing = comment
            continue
        pending.append((comment, pieces[i] if i < len(pieces) else None))
    for comment, piece in pending:
        if piece is None:
            result.tail.append(comment)
        else:
            result.at(*piece.key).leading.append(comment)
    piece_start = {piece.key: piece.start for piece in pieces}
    for key in result.keys():
        attached = result.at(*key)
        if attached.leading:
            attached.gap_after = _gap_after(text, attached.leading[-1], piece_start.get(key))
    return result


def _gap_after(text: str, comment: Comment, start: int | None) -> bool:
    """Whether an empty line stands between `comment` and the piece starting at `start`."""
    if start is None or start < comment.pos:
        return False
    between = text[comment.pos : start]
    lines = between.split("\n")[1:-1]  # the lines wholly between them
    return any(not line.strip() for line in lines)


def read_comments(text: str, filename: str, module: ModuleOp) -> DocumentComments:
    """The comments of `text` attached to `module`, the IR the frontend built from it."""
    from irkit.frontend.syntax import parse_syntax

    syntax = parse_syntax(text, filename)
    if syntax.tree is None:
        result = DocumentComments()
        result.tail = scan_comments(text)
        return result
    return attach_comments(text, syntax.tree, module)
