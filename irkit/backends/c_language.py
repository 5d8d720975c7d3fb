"""The language hooks of the C emitter: what it prints that another C-like language spells differently.

`irkit.backends.c` walks the loop IR and writes C statements -- declarations,
`for` loops, loads and stores as array accesses, arithmetic -- that every C
dialect shares.  What differs between C99 with OpenMP, ISPC, OpenCL C or
CUDA is gathered here, in `CLanguage`, whose methods the emitter calls (as
tinygrad's renderers are subclasses of one C-style renderer).  A new target
subclasses it and overrides what its language says otherwise, and passes an
instance to `emit_c(module, language=...)`:

- `restrict`: the no-alias qualifier of tensor pointers and temporaries
  (`__restrict__` in CUDA and C++);
- `banner()` and `prelude(alloc, math)`: the file's second comment line and
  the `#define`/`#include` lines before the helpers;
- `kernel_signature(symbol, params)`, `size_param(name)`,
  `tensor_param(ctype, name, readonly)`: the kernel's declaration (CUDA's
  `__global__`, OpenCL's `__kernel` and `__global` pointers, ISPC's
  `export` and `uniform`);
- `part_qualifier`: the qualifiers of the functions a large kernel is
  outlined into (`irkit.backends.c_outline`; CUDA's `__device__`);
- `assume_aligned(name, pointer_type, align)`: the kernel's first lines that
  promise an argument's alignment;
- `pragma(directive)`, `loop_pragma(...)`, `unroll_pragma(factor)`: the
  parallel-loop, SIMD-loop (reduction, simdlen, aligned clauses) and unroll
  annotations before a `for` (OpenMP's `#pragma omp`, GCC's unroll; ISPC
  would print `foreach`, CUDA a grid-stride loop, or nothing);
- `prefetch(element, write)`: a software prefetch of an element's line (the
  next register block's, `irkit.backends.c_plan.plan_prefetch`);
- `relaxed_math_region(body)`: the lines around a kernel that may contract
  `a * b + c` (GCC's `fp-contract=fast` options);
- `vector_typedef(ctype, name, size)`: an explicit vector type of the SIMD
  path (`irkit.backends.c_simd`; GCC's vector extension).

The helper functions (`irkit_floordiv`, the fast `exp`, the streaming-store
macros) and explicit vector loads (`__builtin_memcpy`) are C and GCC text,
not hooks: a target that cannot compile them provides its own.
A leaf module: it imports nothing from irkit.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["C_STD", "CLanguage"]

C_STD = "c99"


class CLanguage:
    """C99 with OpenMP pragmas and GCC extensions, built by `cc -std=c99 -fopenmp`."""

    restrict = "restrict"
    part_qualifier = "static __attribute__((noinline))"

    # ---- the file
    def banner(self) -> str:
        """The second comment line of the file: what it is and how to build it."""
        return f"C99 with OpenMP: cc -std={C_STD} -fopenmp. Do not edit; regenerate from the document."

    def prelude(self, alloc: bool, math: bool) -> list[str]:
        """The lines before the helpers: feature macros and headers (`alloc`: the kernels
        allocate temporaries; `math`: they call libm or use INFINITY/NAN)."""
        out = []
        if alloc:
            out.append("#define _POSIX_C_SOURCE 200112L /* posix_memalign */")
        out.append("#include <stdint.h>")
        if alloc:
            out += ["#include <stdio.h>", "#include <stdlib.h>"]
        if math:
            out.append("#include <math.h>")
        return out

    def relaxed_math_region(self, body: list[str]) -> list[str]:
        """A kernel under `relaxed_math`, which allows contracting a * b + c into one FMA (one
        rounding instead of two); other kernels keep C99's op-by-op rounding, which is what
        the numpy oracle computes."""
        return ["#pragma GCC push_options", '#pragma GCC optimize ("fp-contract=fast")', *body, "#pragma GCC pop_options"]

    # ---- the kernel's declaration and entry
    def kernel_signature(self, symbol: str, params: Sequence[str]) -> str:
        return f"void {symbol}({', '.join(params)})"

    def size_param(self, name: str) -> str:
        return f"int64_t {name}"

    def scalar_param(self, ctype: str, name: str) -> str:
        """A scalar passed by value (`const`: the kernel only reads it)."""
        return f"const {ctype} {name}"

    def tensor_param(self, ctype: str, name: str, readonly: bool) -> str:
        return f"{'const ' if readonly else ''}{ctype} *{self.restrict} {name}"

    def assume_aligned(self, name: str, pointer_type: str, align: int) -> str:
        """A statement promising that pointer `name` is aligned to `align` bytes."""
        return f"{name} = ({pointer_type})__builtin_assume_aligned({name}, {align});"

    # ---- loops
    def pragma(self, directive: str) -> str:
        """An OpenMP directive line."""
        return f"#pragma omp {directive}"

    def loop_pragma(
        self,
        parallel: bool,
        simd: bool,
        reductions: Sequence[tuple[str, str]] = (),
        simdlen: int | None = None,
        aligned: Sequence[tuple[int, Sequence[str]]] = (),
    ) -> str:
        """The annotation of a loop whose iterations run in parallel on threads (`parallel`),
        in SIMD lanes (`simd`), or both; for a SIMD loop its reductions (OpenMP identifier,
        accumulator), its vector length (None: not said) and the buffers whose first
        element is aligned, by alignment."""
        words: list[str] = []
        if parallel:
            words = ["parallel for", "simd"] if simd else ["parallel for"]
            words.append("schedule(static)")
        elif simd:
            words = ["simd"]
        if simd:
            words += [f"reduction({omp}:{acc})" for omp, acc in reductions]
            if simdlen is not None:
                words.append(f"simdlen({simdlen})")
            words += [f"aligned({', '.join(names)}: {align})" for align, names in aligned]
        return self.pragma(" ".join(words))

    def unroll_pragma(self, factor: int) -> str:
        return f"#pragma GCC unroll {factor}"

    def prefetch(self, element: str, write: bool) -> str:
        """A statement that asks for the line holding `element` (an lvalue) in every cache level,
        for reading or for writing (GCC's builtin; a target without one prints nothing)."""
        return f"__builtin_prefetch(&{element}, {int(write)}, 3);"

    # ---- explicit vectors
    def vector_typedef(self, ctype: str, name: str, size: int) -> str:
        """The type `name` of `size` bytes of `ctype` lanes."""
        return f"typedef {ctype} {name} __attribute__((vector_size({size})));"
