"""Outlining a large kernel's loop nests into functions of their own, so the C compiler's cost
stays linear in the document.

gcc optimises a function as a whole, and several of its passes (PRE, jump threading,
register allocation's dataflow) grow faster than the function: one kernel of 1,000
one-line statements took 36 s and 640 MB to compile at -O3, 2,000 took minutes.  Cut
into functions of a few hundred lines, the same code compiles in time proportional to
its length.  Small kernels (under `MIN_LINES` lines of body) are left exactly as they
are.

The kernel's body, as `KernelEmitter` rendered it, is cut along its top-level loop
nests: consecutive nests are gathered into parts of about `PART_LINES` lines, each
written as

    static __attribute__((noinline)) void irkit_<kernel>__part<k>(<what it uses>) { <the nests> }

and called in its place.  A part's parameters are the kernel-level names its text
mentions -- sizes, tensors, temporaries, strides, scalars -- with the types of their
declarations, so pointers keep `restrict` and `const`.  A nest is kept in the kernel
(not outlined) when it could not be moved safely: it declares or assigns a kernel-level
name, contains `return`, or mentions a kernel-level name whose declaration is not one
this module reads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

INDENT = "    "
MIN_LINES = 2_000  # kernels with a shorter body are not outlined
PART_LINES = 400  # about this many lines per outlined function

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _idents(line: str) -> list[str]:
    """The identifiers of a line of C, not counting those inside string literals."""
    return _IDENT.findall(_STRING.sub('""', line))


@functools.cache
def _decl_pattern(restrict: str) -> re.Pattern[str]:
    """`    [const ]TYPE [*restrict ]NAME = ...;` at the kernel's top level."""
    return re.compile(
        r"^    (?P<type>(?:const )?(?:int64_t|int32_t|float|double|size_t|int))\s*"
        rf"(?P<ptr>\*\s*(?:{re.escape(restrict)}\s+)?)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=",
    )


@functools.cache
def _alloc_pattern(restrict: str) -> re.Pattern[str]:
    """`    T *restrict NAME = (T *)irkit_alloc(...);` at the kernel's top level."""
    return re.compile(
        rf"^    (?P<ctype>[A-Za-z_]\w*) \*{re.escape(restrict)} (?P<name>[A-Za-z_]\w*) = "
        r"\((?P=ctype) \*\)(?P<call>irkit_alloc\(.*\));$"
    )
_PARAM = re.compile(r"^(?P<type>.*?)(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
# Top-level lines that declare nothing: comments, frees, `(void)x;`, re-assignments of parameters.
_HARMLESS = re.compile(r"^    (?:/\*.*\*/|free\(.*\);|\(void\)[A-Za-z_]\w*;|[A-Za-z_]\w* = .*;)\s*$")


def _declaration(param: str) -> tuple[str, str] | None:
    """(name, declaration) of a C parameter like `const float *restrict A`."""
    m = _PARAM.match(param.strip())
    return (m.group("name"), param.strip()) if m else None


def _nest_ok(lines: Sequence[str], top: set[str]) -> bool:
    """May these lines (one top-level nest) move into a function of their own?"""
    for line in lines:
        if re.search(r"\breturn\b", line):
            return False
        if line.startswith(INDENT) and not line.startswith(INDENT * 2):
            text = line[len(INDENT) :]
            if not (text.startswith(("for ", "for(", "#pragma", "/*", "{", "}")) or not text.strip()):
                return False  # a kernel-level statement (a declaration, an assignment): keep it in place
    for line in lines:
        for m in re.finditer(r"\b([A-Za-z_]\w*)\s*(?:[-+*/]?=)(?!=)", line):
            if m.group(1) in top and not line.lstrip().startswith(("for", "#")):
                return False  # assigns a kernel-level name (a scalar, or a pointer re-aimed)
    return True


def _kernel_names(
    params: Sequence[str], body: Sequence[str], nests: Sequence[tuple[int, int]], restrict: str
) -> tuple[dict[str, str], set[str]]:
    """(name -> declaration as a parameter, names whose declaration is not understood) of the
    kernel-level names: its parameters and the declarations outside `nests`."""
    decls: dict[str, str] = {}
    for p in params:
        d = _declaration(p)
        if d is not None:
            decls[d[0]] = d[1]
    in_nest = [False] * len(body)
    for start, end in nests:
        for i in range(start, end):
            in_nest[i] = True
    unknown: set[str] = set()
    for i, line in enumerate(body):
        if in_nest[i] or not line.strip():
            continue
        m = _decl_pattern(restrict).match(line)
        if m:
            ctype = m.group("type")
            if m.group("ptr"):  # a pointer keeps its const and restrict
                decls[m.group("name")] = f"{ctype} *{restrict} {m.group('name')}"
            else:  # a scalar is passed by value
                decls[m.group("name")] = f"{ctype.removeprefix('const ')} {m.group('name')}"
        elif not _HARMLESS.match(line):
            unknown.update(_idents(line))
    return decls, unknown


def outline(
    kname: str,
    params: Sequence[str],
    body: Sequence[str],
    nests: Sequence[tuple[int, int]],
    restrict: str = "restrict",
    qualifier: str = "static __attribute__((noinline))",
) -> tuple[list[str], list[str]]:
    """(functions, new body): `body` (the kernel's lines between its braces) with the
    top-level nests `nests` (line ranges [start, end) of `body`) moved into functions
    declared `qualifier void ...`, whose pointer parameters are `restrict`-qualified."""
    if len(body) < MIN_LINES or not nests:
        return [], list(body)
    decls, unknown = _kernel_names(params, body, nests, restrict)
    top = set(decls)
    functions: list[str] = []
    out: list[str] = []
    part: list[tuple[int, int]] = []
    size = 0
    pos = 0
    count = 0

    def flush() -> None:
        nonlocal part, size, count
        if not part:
            return
        lines = [ln for s, e in part for ln in body[s:e]]
        used = {w for ln in lines for w in _idents(ln)}
        names = [n for n in decls if n in used]
        fname = f"{kname}__part{count}"
        count += 1
        sig = ", ".join(decls[n] for n in names) or "void"
        functions.extend([f"{qualifier} void {fname}({sig})", "{", *lines, "}", ""])
        out.append(f"{INDENT}{fname}({', '.join(names)});")
        part, size = [], 0

    for start, end in nests:
        if start < pos:
            continue
        if pos < start:  # kernel-level lines between nests stay, in order
            flush()
            out.extend(body[pos:start])
        lines = body[start:end]
        used = {w for ln in lines for w in _idents(ln)}
        if used & unknown or not _nest_ok(lines, top):
            flush()
            out.extend(lines)
        else:
            part.append((start, end))
            size += end - start
            if size >= PART_LINES:
                flush()
        pos = end
    flush()
    out.extend(body[pos:])
    if count == 0:
        return [], list(body)
    slotted = _slot_temporaries(out, restrict)
    if slotted is out:
        return functions, out
    return _outline_runs(kname, decls, slotted, functions, qualifier)


_SLOT_LINE = re.compile(r"^    (?:irkit_tmp\[\d+\] = irkit_alloc\(.*\)|free\(irkit_tmp\[\d+\]\));$")


def _outline_runs(
    kname: str, decls: dict[str, str], body: list[str], functions: list[str], qualifier: str
) -> tuple[list[str], list[str]]:
    """Move runs of slot allocations and frees into functions too: a kernel of thousands of
    calls in a row is another function gcc's register allocator is slow on."""
    out: list[str] = []
    run: list[str] = []
    count = 0

    def flush() -> None:
        nonlocal run, count
        if not run:
            return
        used = {w for ln in run for w in _idents(ln)}
        names = [n for n in decls if n in used]
        fname = f"{kname}__slots{count}"
        count += 1
        sig = ", ".join(["void **irkit_tmp", *(decls[n] for n in names)])
        functions.extend([f"{qualifier} void {fname}({sig})", "{", *run, "}", ""])
        out.append(f"{INDENT}{fname}({', '.join(['irkit_tmp', *names])});")
        run = []

    for line in body:
        if _SLOT_LINE.match(line):
            run.append(line)
            if len(run) >= PART_LINES:
                flush()
            continue
        flush()
        out.append(line)
    flush()
    return functions, out


def _slot_temporaries(body: list[str], restrict: str) -> list[str]:
    """Keep the kernel-level temporaries in one array instead of one variable each.

    Thousands of pointers live from their allocation to the kernel's end made gcc's
    register allocator superlinear (36 s of 44 for 4,000 statements); slots of an
    array are loaded where a part is called and cost it nothing.  Only temporaries
    that the kernel itself uses only in part calls and `free` are moved.
    """
    alloc = _alloc_pattern(restrict)
    temps: dict[str, tuple[str, int]] = {}
    for line in body:
        m = alloc.match(line)
        if m:
            temps[m.group("name")] = (m.group("ctype"), len(temps))
    if not temps:
        return body
    calls = re.compile(r"^    irkit_\w+__part\d+\((?P<args>.*)\);$")
    frees = re.compile(r"^    free\((?P<name>[A-Za-z_]\w*)\);$")
    for line in body:
        if alloc.match(line) or calls.match(line) or frees.match(line):
            continue
        for w in _idents(line):
            temps.pop(w, None)  # used by kernel-level code: it stays a variable
    if not temps:
        return body
    out = [f"{INDENT}void *irkit_tmp[{len(temps)}];"]
    for line in body:
        m = alloc.match(line)
        if m and m.group("name") in temps:
            out.append(f"{INDENT}irkit_tmp[{temps[m.group('name')][1]}] = {m.group('call')};")
            continue
        m = frees.match(line)
        if m and m.group("name") in temps:
            out.append(f"{INDENT}free(irkit_tmp[{temps[m.group('name')][1]}]);")
            continue
        m = calls.match(line)
        if m:
            args = [a.strip() for a in m.group("args").split(",")]
            new = [f"({temps[a][0]} *)irkit_tmp[{temps[a][1]}]" if a in temps else a for a in args]
            line = line[: line.index("(") + 1] + ", ".join(new) + ");"
        out.append(line)
    return out
