import sys

from bench.blas_env import native_blas

native_blas("bench")

from bench.cli import main  # noqa: E402 - after the re-run without BLAS overrides

sys.exit(main())
