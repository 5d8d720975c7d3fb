"""The generated assembly of the calibration microbenchmarks is the chain or width it claims.

The clock is only as good as its chain: a chain of `add $1` reads 20.71 GHz
on a Xeon that folds add-immediates.  These tests compile irkit's
microbenchmarks to assembly with the backend's compiler and flags and check
the instructions: dependent `imulq` and register-register `addq` chains
(inline assembly, one instruction repeated), FMAs on exactly the vector
registers of each width, and no 512-bit register in an x86-64-v3 build.
"""

from __future__ import annotations

import platform
import re
import subprocess

import pytest

from irkit.calibrate import kernels

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 assembly")


def assembly(tmp_path, march: str | None) -> str:
    from irkit.backends.build import BASE_FLAGS, default_cflags, find_compiler, march_cflags

    cc = find_compiler()
    flags = march_cflags(march) if march else default_cflags()
    src = tmp_path / "cal.c"
    src.write_text(kernels.source())
    out = tmp_path / "cal.s"
    subprocess.run([*cc, *BASE_FLAGS, *flags, "-S", "-o", str(out), str(src)], check=True, capture_output=True)
    return out.read_text()


def function(asm: str, name: str) -> str:
    m = re.search(rf"^{re.escape(name)}:\n(.*?)^\s*\.size\s+{re.escape(name)},", asm, re.M | re.S)
    assert m, f"{name} not in the assembly"
    return m.group(1)


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    return assembly(tmp_path_factory.mktemp("native"), None)


def rept(body: str) -> list[str]:
    """The instructions inside the function's `.rept N ... .endr` block, with N."""
    m = re.search(r"\.rept\s+(\d+)\s*\n(.*?)\.endr", body, re.S)
    assert m, body[:400]
    lines = [line.strip() for line in m.group(2).splitlines() if line.strip()]
    return [m.group(1), *lines]


def test_the_clock_chains_are_dependent_imuls_and_register_adds(native):
    count, *imul = rept(function(native, "irkit_cal_imul"))
    assert int(count) == kernels.CHAIN
    assert len(imul) == 1 and re.fullmatch(r"imulq\s+%r\w+,\s*%r\w+", imul[0]), imul
    source, dest = re.findall(r"%(r\w+)", imul[0])
    assert source != dest  # x = x * m: the destination is the chain, the multiplier another register
    count, *add = rept(function(native, "irkit_cal_addreg"))
    assert len(add) == 1 and re.fullmatch(r"addq\s+%r\w+,\s*%r\w+", add[0]), add  # a register, not $imm


def test_the_pointer_chase_is_dependent_loads(native):
    """Each load's address is the value the load before it read: the longest such run covers a repetition."""
    loads = re.findall(r"movq\s+\((%r\w+)\),\s*(%r\w+)", function(native, "irkit_cal_chase"))
    longest = run = 1
    for (_, before), (address, _) in zip(loads, loads[1:]):
        run = run + 1 if address == before else 1
        longest = max(longest, run)
    assert longest >= kernels.CHAIN


def fmas(body: str) -> list[tuple[str, str]]:
    return re.findall(r"(vfmadd\w+)\s+%([xyz])mm\d+", body)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_each_width_runs_fmas_of_that_width(native, dtype):
    suffix = "s" if dtype == "f32" else "d"
    lib_widths = [w for w in kernels.WIDTHS if f"cal_fma_{dtype}_{kernels.width_name(w)}_run:" in native]
    assert 32 in lib_widths and 128 in lib_widths
    register = {512: "z", 256: "y", 128: "x", 32: "x"}
    for bits in lib_widths:
        found = fmas(function(native, f"cal_fma_{dtype}_{kernels.width_name(bits)}_run"))
        assert len(found) == kernels.CHAINS, (bits, found)
        kind = f"s{suffix}" if bits == 32 else f"p{suffix}"
        assert all(op.endswith(kind) and reg == register[bits] for op, reg in found), (bits, found)


def test_an_x86_64_v3_build_has_no_512_bit_code(tmp_path):
    asm = assembly(tmp_path, "x86-64-v3")
    assert "zmm" not in asm
    assert "cal_fma_f32_512_run:" not in asm and "cal_fma_f32_256_run:" in asm
