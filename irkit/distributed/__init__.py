"""Compile and measure jobs handed to an executor: in this process (the default), or a Dask cluster.

`irkit tune`, `irkit validate` and `irkit matrix` give their compiles and
measurements to an executor (`connect.get_executor`): `LocalExecutor`
runs them here, as before; `DaskExecutor` (`--scheduler tcp://HOST:8786` or
`IRKIT_SCHEDULER`) sends compiles to any worker of the measuring host's class
and each measurement to a worker holding the `measure` resource on that
host, where a file lock (`host.measure_lock`) lets one measurement run at a
time whatever the number of workers.  Every result carries the fingerprint
of the host that measured it (`host.HostInfo`), and one run measures on one
host class only, so rankings never mix hosts.  See docs/distributed.md.

Modules: `host` (fingerprint, the host's calibrated description, the
measurement lock), `jobs` (the host and compile jobs; each command's
measuring job lives with its measuring code), `executor` (the seam and the
in-process executor), `dask_executor` (Dask's), `connect` (which one).
"""
