"""The `perf` dialect: what a kernel costs, as expressions of its sizes.

One `perf.kernel` per kernel holds one `perf.nest` per top-level loop nest.
Each nest's `terms` map a term name to an expression (text in the syntax of
`irkit.perf.expr`) over the kernel's sizes and the model's symbols: `cap`
(the capacity, in lines, of the cache being priced), `sets` and `ways` (its
sets and associativity), `line` (bytes per line), `lanes32` / `lanes64`
(vector lanes of the hardware), `cores` and `window` (instructions the
out-of-order core looks ahead).

    perf.kernel @triad {sizes = ["N"], kernel_bytes = "16 * N", hardware = {...}} {
      perf.nest {name = "io", origin = "triad.design:25:5", terms = {
        instr_fp = "...", flop_lanes = "...", l1_bytes = "...", lines = "...", ...}}
    }

Terms (per core, for the busiest core, unless said):

| term | meaning |
|---|---|
| `instr_fp`, `instr_div`, `instr_sqrt`, `instr_exp`, `instr_exp_libm` (+`64` for f64) | instructions of each kind (an FMA is one `fp`), with the width in a suffix: none for full-width vectors (gcc's own vectorisation), `_vW` for the chunks of a `vectorize ... by W` loop (W lanes, or as many full vectors as W lanes take), `_s` for scalar instructions |
| `instr_mem`, `instr_mem64` (same suffixes) | load and store instructions (per vector, or per lane of a gather: `_s`) |
| `instr_store`, `instr_store64` (same suffixes) | the part of them that stores |
| `flop_lanes` | floating-point operations of the busiest core (an FMA counts 2) |
| `flops` | floating-point operations of all cores together (exact) |
| `l1_bytes` | bytes every load and store moves |
| `chain_add`, `chain_fma`, `chain_mul`, `chain_max`, `chain_div` | steps of accumulation chains (latency-bound): the dependent ops of each latency class on them, divided by the chains the out-of-order `window` runs at once |
| `lines` | lines moved into a cache of `cap` lines and `sets` sets (fills) |
| `stored_lines` | the part of them that is written (each is written back too) |
| `strided_lines` | the part read down a column (each a miss of its own) |
| `serial_lines` | those strided lines, each divided by the sets its column reaches (misses to one set queue) |
| `untracked_lines` | the part of them no prefetch stream brings: rows the walk jumps between, or more rows side by side than `streams` |
| `waited_lines` | the part of them a load waits for: all but the register blocks the C backend prefetches an iteration ahead (only in nests that have such blocks) |
| `streamed_lines` | lines written with streaming stores (whole kernel) |
| `carry`, `carry_steps` | an accumulator kept in memory across an outer loop: the dependent adds from reload to store, and the entries that wait for the stores of the entry before |
| `vector_setups` | set-up slots of vector loops gcc gets as `omp simd` and enters for one vector: 1 + the loop's accesses, an entry |
| `active` | cores busy in the nest's parallel loop (1 when serial) |
| `regions` | times a parallel loop is entered (fork/join), all cores |

`irkit.perf.runtime` prices these on a hardware description; the Python
backend (`--emit python`) turns them into a standalone module.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.traits import NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from irkit.units import CONFLICT_SHARE_KEYS

MODEL_SYMBOLS = frozenset(
    {"cap", "keep", "sets", "ways", "line", "lanes32", "lanes64", "cores", "window", "huge_page", "streams", *CONFLICT_SHARE_KEYS}
)


def _check_expr(text: str, allowed: set[str], where: str) -> None:
    from irkit.perf.expr import parse

    try:
        e = parse(text)
    except (ValueError, SyntaxError) as exc:
        raise VerifyException(f"{where}: '{text}' is not a cost expression ({exc})") from None
    unknown = sorted(e.free() - allowed)
    if unknown:
        raise VerifyException(f"{where}: '{text}' uses {', '.join(unknown)}, which is not a size or a model symbol")


@irdl_op_definition
class KernelOp(IRDLOperation):
    """The cost of one kernel: its sizes, its buffers' total bytes, and one nest op per loop nest."""

    name = "perf.kernel"
    sym_name = prop_def(StringAttr)
    sizes = prop_def(ArrayAttr[StringAttr])
    kernel_bytes = prop_def(StringAttr)
    fresh_pages = opt_prop_def(StringAttr)  # 4 KiB pages of temporaries that are fresh memory at every call
    hardware = opt_prop_def(DictionaryAttr)
    assumptions = opt_prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(
        self,
        name: str,
        sizes: list[str],
        kernel_bytes: str,
        fresh_pages: str,
        nests: list[NestOp],
        hardware: DictionaryAttr | None = None,
        assumptions: list[str] | None = None,
    ):
        from xdsl.ir import Block, Region

        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "sizes": ArrayAttr([StringAttr(s) for s in sizes]),
            "kernel_bytes": StringAttr(kernel_bytes),
        }
        if fresh_pages != "0":
            props["fresh_pages"] = StringAttr(fresh_pages)
        if hardware is not None:
            props["hardware"] = hardware
        if assumptions is not None:
            props["assumptions"] = ArrayAttr([StringAttr(a) for a in assumptions])
        super().__init__(properties=props, regions=[Region(Block(nests))])

    @property
    def size_names(self) -> list[str]:
        return [s.data for s in self.sizes.data]

    def verify_(self) -> None:
        allowed = set(self.size_names) | MODEL_SYMBOLS
        _check_expr(self.kernel_bytes.data, allowed, "kernel_bytes")
        if self.fresh_pages is not None:
            _check_expr(self.fresh_pages.data, allowed, "fresh_pages")
        for op in self.body.block.ops:
            if not isinstance(op, NestOp):
                raise VerifyException(f"perf.kernel holds perf.nest ops only, found {op.name}")
            local = set(allowed)
            for key, text in op.def_texts().items():
                _check_expr(text, local, f"def '{key}' of nest '{op.nest_name.data}'")
                local.add(key)
            for key, value in op.terms.data.items():
                if not isinstance(value, StringAttr):
                    raise VerifyException(f"term '{key}' of nest '{op.nest_name.data}' must be a string expression")
                _check_expr(value.data, local, f"term '{key}' of nest '{op.nest_name.data}'")


@irdl_op_definition
class NestOp(IRDLOperation):
    """The cost terms of one top-level loop nest (see the module docstring for the terms)."""

    name = "perf.nest"
    nest_name = prop_def(StringAttr, prop_name="name")
    origin = opt_prop_def(StringAttr)
    defs = opt_prop_def(ArrayAttr[StringAttr])  # "s0 = expr", ...: shared subterms, in order
    terms = prop_def(DictionaryAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, name: str, terms: dict[str, str], origin: str | None = None, defs: dict[str, str] | None = None):
        props: dict[str, Attribute] = {
            "name": StringAttr(name),
            "terms": DictionaryAttr({k: StringAttr(v) for k, v in terms.items()}),
        }
        if defs:
            props["defs"] = ArrayAttr([StringAttr(f"{k} = {v}") for k, v in defs.items()])
        if origin:
            props["origin"] = StringAttr(origin)
        super().__init__(properties=props)

    def term_texts(self) -> dict[str, str]:
        return {k: v.data for k, v in self.terms.data.items() if isinstance(v, StringAttr)}

    def def_texts(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for item in self.defs.data if self.defs is not None else ():
            name, sep, text = item.data.partition(" = ")
            if not sep or not name.isidentifier():
                raise VerifyException(
                    f"a def of nest '{self.nest_name.data}' must read 'NAME = EXPR', got '{item.data}'"
                )
            out[name] = text
        return out

    def expressions(self):
        """The terms as expressions over sizes and model symbols (defs substituted)."""
        from irkit.perf.expr import parse, subs

        env: dict = {}
        for name, text in self.def_texts().items():
            env[name] = subs(parse(text), env)
        return {k: subs(parse(v), env) for k, v in self.term_texts().items()}


Perf = Dialect("perf", [KernelOp, NestOp], [])
