"""Which names may reach generated C.

Names from a document (the kernel, its sizes and tensors, loop names) are
pasted into C as identifiers, so each is checked first.  A usable name

- matches `[A-Za-z][A-Za-z0-9_]*` (a leading underscore is reserved to the
  C implementation in many positions, so it is refused everywhere),
- has at most `MAX_LENGTH` (63) characters, the number C99/C11 guarantee
  to be significant in an internal identifier,
- is not a C keyword (C89 to C23, plus `asm`/`typeof`),
- does not start with `irkit_` (the prefix of every name the backend
  generates: kernel entry points, helpers), and
- does not name something the headers the generated code includes
  (`<stdint.h>`, `<stddef.h>`, `<stdlib.h>`, `<math.h>`, `<stdio.h>`)
  declare as a macro, type or function: a tensor called `free` or a size
  called `INFINITY` would silently change what the C means.

`name_problem(name)` says what is wrong with a name (None if nothing);
`name_diagnostic` makes the located error (the checker reports it, so that
`irkit check` refuses what the C backend would), and `check_name` raises it.
"""

from __future__ import annotations

import re

from xdsl.ir import Operation

from irkit.diagnostics import Diagnostic, DiagnosticError, at_op

MAX_LENGTH = 63
RESERVED_PREFIX = "irkit_"
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")

C_KEYWORDS = frozenset(
    """
    auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    alignas alignof bool constexpr false nullptr static_assert thread_local true typeof typeof_unqual
    asm fortran
    """.split()
)

_MATH_FUNCTIONS = """
    acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb ldexp log log10
    log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma tgamma ceil floor nearbyint rint
    lrint llrint round lround llround trunc fmod remainder remquo copysign nan nextafter nexttoward fdim fmax fmin
    fma
""".split()

_LIBRARY_NAMES = (
    # <math.h> macros and types
    """
    INFINITY NAN HUGE_VAL HUGE_VALF HUGE_VALL FP_INFINITE FP_NAN FP_NORMAL FP_SUBNORMAL FP_ZERO FP_FAST_FMA
    FP_FAST_FMAF FP_FAST_FMAL FP_ILOGB0 FP_ILOGBNAN MATH_ERRNO MATH_ERREXCEPT math_errhandling float_t double_t
    fpclassify isfinite isinf isnan isnormal signbit isgreater isgreaterequal isless islessequal islessgreater
    isunordered
    """
    # <stdlib.h>
    """
    malloc calloc realloc free aligned_alloc posix_memalign abort exit atexit at_quick_exit quick_exit getenv
    system qsort bsearch abs labs llabs div ldiv lldiv div_t ldiv_t lldiv_t rand srand atof atoi atol atoll
    strtod strtof strtold strtol strtoll strtoul strtoull mblen mbtowc wctomb mbstowcs wcstombs EXIT_SUCCESS
    EXIT_FAILURE RAND_MAX MB_CUR_MAX NULL
    """
    # <stddef.h> and <stdint.h> types and macros
    """
    size_t ptrdiff_t wchar_t max_align_t offsetof intptr_t uintptr_t intmax_t uintmax_t
    SIZE_MAX PTRDIFF_MIN PTRDIFF_MAX SIG_ATOMIC_MIN SIG_ATOMIC_MAX WCHAR_MIN WCHAR_MAX WINT_MIN WINT_MAX
    INTPTR_MIN INTPTR_MAX UINTPTR_MAX INTMAX_MIN INTMAX_MAX UINTMAX_MAX INTMAX_C UINTMAX_C
    """
    # <stdio.h>
    """
    FILE fpos_t stdin stdout stderr EOF BUFSIZ FILENAME_MAX FOPEN_MAX L_tmpnam TMP_MAX SEEK_SET SEEK_CUR SEEK_END
    printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf scanf fscanf sscanf fopen fclose fflush
    fread fwrite fputs fgets puts putchar getchar putc getc fputc fgetc perror remove rename tmpfile tmpnam
    setbuf setvbuf ungetc fseek ftell rewind feof ferror clearerr fgetpos fsetpos gets
    """
    # <assert.h>, <errno.h>, what the harness and the C runtime use
    "assert errno main"
).split()


def _stdint_names() -> list[str]:
    out = []
    for width in (8, 16, 32, 64):
        for kind in ("", "_least", "_fast"):
            out += [f"int{kind}{width}_t", f"uint{kind}{width}_t"]
            upper = kind.upper()
            out += [f"INT{upper}{width}_MIN", f"INT{upper}{width}_MAX", f"UINT{upper}{width}_MAX"]
        out += [f"INT{width}_C", f"UINT{width}_C"]
    return out


LIBRARY_NAMES = frozenset(
    _LIBRARY_NAMES + _stdint_names() + [f + suffix for f in _MATH_FUNCTIONS for suffix in ("", "f", "l")]
)


def name_problem(name: str) -> str | None:
    """What makes `name` unusable as a C identifier in generated code, or None."""
    if not name:
        return "the name is empty"
    if not IDENTIFIER.match(name):
        if name[0] == "_" and re.fullmatch(r"[A-Za-z0-9_]+", name):
            return "names starting with '_' are reserved to the C implementation"
        return "a name must be a letter followed by letters, digits and '_'"
    if len(name) > MAX_LENGTH:
        return f"the name has {len(name)} characters, more than the {MAX_LENGTH} C guarantees to distinguish"
    if name in C_KEYWORDS:
        return "it is a C keyword"
    if name.startswith(RESERVED_PREFIX):
        return f"names starting with '{RESERVED_PREFIX}' are reserved for generated code"
    if name in LIBRARY_NAMES:
        return "the generated C includes a standard header that defines this name"
    return None


def is_c_name(name: str) -> bool:
    return name_problem(name) is None


def name_diagnostic(name: str, what: str, op: Operation, focus: str | None = None) -> Diagnostic | None:
    """The error at `op` saying why `what` (e.g. "tensor") cannot be called `name`, or None."""
    problem = name_problem(name)
    if problem is None:
        return None
    shown = name if len(name) <= 80 else name[:77] + "..."
    return at_op("error", f"{what} name {shown!r} cannot be used in C: {problem}", op, focus=focus or name)


def check_name(name: str, what: str, op: Operation) -> str:
    """`name`, or a `DiagnosticError` at `op` saying why `what` (e.g. "tensor") cannot be called that."""
    diag = name_diagnostic(name, what, op)
    if diag is not None:
        raise DiagnosticError([diag])
    return name
