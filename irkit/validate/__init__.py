"""`irkit validate`: the cost model's predictions against measured times.

- `suite`: the cases -- every example document under several schedules
  (its own, none, and meaningful alternatives) at sizes from cache-resident
  to DRAM-bound;
- `measure`: compile each variant and time it in its steady state
  (`irkit.timing`), the schedules of one kernel and size alternated, every
  case three times (three passes over the suite);
- `stats`: absolute percentage error, median and percentiles, Kendall's
  tau-b, the summary;
- `ranking`: what a tuner needs per kernel and size -- the top-1 score,
  pairwise ordering accuracy -- and the run-to-run noise;
- `targets`: the figures the model is held to, native and for another ISA;
- `host`: whether the description given with --hw is this host's and the
  build's (warnings);
- `report`: the Markdown report and the predicted-vs-measured plot.

The command itself is `irkit.tools.validate`; docs/validate.md describes it.
"""
